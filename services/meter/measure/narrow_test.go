package measure

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// The default table fits 100 columns, even for a suite of 200 trials: it
// shows pass@1 and pass@n, folds the rarer counts into "other" and names
// them below the table.
func TestTheDefaultTableFits100Columns(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"baseline", "no-stall", "patient"}, 200))
	for trial := uint32(1); trial <= 200; trial++ {
		l.attempt("c1", "baseline", trial, events.RunDone, u64(1234), vr(events.VerdictOK()))
		l.attempt("c1", "no-stall", trial, events.RunErrored, nil, nil)
	}
	r := l.report()
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	heading := 2 // the suite line and the spec line may be long: they hold a digest
	for i, line := range strings.Split(out, "\n") {
		if i >= heading && len([]rune(line)) > 100 && !strings.HasPrefix(line, "comparisons") && !strings.Contains(line, " vs ") {
			t.Errorf("line %d is %d columns: %q", i, len([]rune(line)), line)
		}
	}
	for _, want := range []string{"pass@1", "pass@200", "other", "no-stall: 200 excluded, 200 awaiting, 200 harness errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pass@2 ") || strings.Contains(out, "pass@199") {
		t.Errorf("the narrow table lists every pass@k:\n%s", out)
	}
	var wide bytes.Buffer
	if err := WriteWideTable(&wide, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wide.String(), "pass@50") || strings.Contains(wide.String(), "pass@199") || !strings.Contains(wide.String(), "harness errors") {
		t.Errorf("the wide table shows every column and pass@k for 1, 2, 5, 10 … n:\n%s", wide.String())
	}
}

func TestPassKsAreOneAFewAndN(t *testing.T) {
	for n, want := range map[int][]int{1: {1}, 3: {1, 2, 3}, 10: {1, 2, 5, 10}, 200: {1, 2, 5, 10, 20, 50, 100, 200}} {
		if got := PassKs(n); !slices.Equal(got, want) {
			t.Errorf("PassKs(%d) = %v, want %v", n, got, want)
		}
	}
}
