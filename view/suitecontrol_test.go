package view_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// The suite page's heading says who controlled the suite, when and why,
// where the controls left it and how many attempts never ran; the suites
// page says where the controls left it.
func TestTheSuitePageShowsTheOperatorsControls(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	commit := func(owner events.Owner, body events.Body) error {
		_, err := b.Commit(ctx, nil, "ctl", events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: "ctl", Run: events.SuiteScope, Position: log.NextPosition(),
				Producer: events.Producer{Service: owner, Instance: "test"}}, body)
			return []bus.Pending{{Fact: f}}, err
		})
		return err
	}
	d := events.DigestOf([]byte("x"))
	if err := commit(events.OwnerSubmitter, events.SuiteSubmitted{Name: "ctl", SpecDigest: d,
		Cases: []events.Ref{{ID: "a", Digest: d}, {ID: "b", Digest: d}}, Treatments: []events.Ref{{ID: "t", Digest: d}}, Trials: 1}); err != nil {
		t.Fatal(err)
	}
	if err := commit(events.OwnerSubmitter, events.SuiteControlled{ID: "c1", Action: events.SuiteDrain,
		From: "ops@build-7", Reason: "budget spent"}); err != nil {
		t.Fatal(err)
	}
	_, h := serveCaughtUp(t, ctx, b)
	code, page := get(t, h.URL+"/suites/ctl")
	if code != 200 {
		t.Fatalf("suite page: %d", code)
	}
	for _, want := range []string{`id="suite-controlled" data-value="drained"`, "drain by ops@build-7 at ", "(budget spent)", "2 attempts never ran"} {
		if !strings.Contains(page, want) {
			t.Errorf("the suite page lacks %q", want)
		}
	}
	if _, list := get(t, h.URL+"/suites"); !strings.Contains(list, " · drained") {
		t.Error("the suites page does not say the suite is drained")
	}
}
