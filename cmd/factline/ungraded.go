package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/factline/factline/services/meter/measure"
)

// warnUngraded says on errOut which treatments of a measured suite had no
// attempt graded passed or failed: their pass rate is undefined, and with
// no pass-rate gate run exits 0 on them as on any measured suite (whether
// that should fail a job is a policy; --fail-under is how a job asks).
// A suite every attempt of which was a harness error exits 5 instead, and
// a pass-rate gate fails on it with its own message: neither is warned of.
func warnUngraded(errOut io.Writer, r measure.Report, gates []measure.Gate) {
	if !r.Complete {
		return
	}
	for _, g := range gates {
		if g.Scorer == "" {
			return
		}
	}
	for _, t := range r.Treatments {
		if t.PassRate != nil || t.Planned == 0 || t.HarnessErrors == t.Planned {
			continue
		}
		var what []string
		for _, c := range []struct {
			n    int
			name string
		}{{t.Abstained, "abstained"}, {t.Pending, "pending"}, {t.Invalid, "invalid"}, {t.Excluded, "excluded"},
			{t.Disputed, "disputed"}, {t.Awaiting, "awaiting"}} {
			if c.n > 0 {
				what = append(what, fmt.Sprintf("%d %s", c.n, c.name))
			}
		}
		fmt.Fprintf(errOut, "warning: treatment %s of suite %s: no attempt was graded passed or failed (%s): its pass rate is undefined, "+
			"and no gate fails the job on it; --fail-under RATE does (docs/report.md#gates)\n", t.Treatment, r.Suite, strings.Join(what, ", "))
	}
}
