package grader

import (
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// summary renders a containment record on one log line: each feature's
// state, with its limit where it has one.
func summary(rec *events.Containment) string {
	if rec == nil {
		return "none: the probe failed"
	}
	parts := make([]string, 0, len(rec.Features))
	for _, f := range rec.Features {
		p := f.Name + "=" + f.State
		if f.Limit > 0 {
			p += ":" + strconv.FormatUint(f.Limit, 10)
		}
		parts = append(parts, p)
	}
	return rec.Provider + " " + strings.Join(parts, " ")
}
