package events_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
)

func TestFactSubjectRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.SampledFrom(events.Kinds()).Draw(t, "kind")
		suite := genSuite.Draw(t, "suite")
		run := events.SuiteScope
		if !k.SuiteScoped() {
			run = genRunID.Draw(t, "run")
		}
		subj, err := events.FactSubject(suite, run, k)
		if err != nil {
			t.Fatalf("FactSubject(%q, %q, %s): %v", suite, run, k, err)
		}
		if want := "fact." + suite + "." + run + "." + string(k); subj != want {
			t.Fatalf("subject %q, want %q", subj, want)
		}
		if !strings.HasPrefix(subj, strings.TrimSuffix(events.RunFilter(suite, run), ">")) {
			t.Fatalf("subject %q is outside its run filter %q", subj, events.RunFilter(suite, run))
		}
		s, r, gotKind, err := events.ParseFactSubject(subj)
		if err != nil {
			t.Fatalf("ParseFactSubject(%q): %v", subj, err)
		}
		if s != suite || r != run || gotKind != k {
			t.Fatalf("parsed %q into (%q, %q, %s)", subj, s, r, gotKind)
		}
	})
}

func TestFactSubjectOfFact(t *testing.T) {
	for _, c := range goldenFacts(t) {
		subj, err := c.fact.Subject()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := "fact." + goldenSuite + "." + goldenRun + "." + string(c.fact.Kind())
		if c.fact.Kind().SuiteScoped() {
			want = "fact." + goldenSuite + "._suite." + string(c.fact.Kind())
		}
		if subj != want {
			t.Errorf("%s: subject %q, want %q", c.name, subj, want)
		}
	}
}

func TestControlAndStatusSubjects(t *testing.T) {
	for _, sig := range allSignals {
		subj, err := events.ControlSubject("s1", "r1", sig)
		if err != nil {
			t.Fatal(err)
		}
		if want := "ctl.s1.r1." + string(sig); subj != want {
			t.Errorf("control subject %q, want %q", subj, want)
		}
	}
	_, err := events.ControlSubject("s1", "r1", "pause")
	wantFieldError(t, err, events.ErrInvalidField, "", "signal")
	_, err = events.ControlSubject("s1", "r1", "")
	wantFieldError(t, err, events.ErrMissingField, "", "signal")

	subj, err := events.StatusSubject("s1", "r1")
	if err != nil || subj != "status.s1.r1" {
		t.Errorf("status subject %q, %v", subj, err)
	}
}

func TestFilters(t *testing.T) {
	for got, want := range map[string]string{
		events.RunFilter("s1", "r1"):              "fact.s1.r1.>",
		events.SuiteFilter("s1"):                  "fact.s1.>",
		events.KindFilter(events.KindStopDecided): "fact.*.*.stop.decided",
	} {
		if got != want {
			t.Errorf("filter %q, want %q", got, want)
		}
	}
}

// badTokens are refused as a suite or run token; each error must name the
// token (which one, and for a bad character its value).
var badTokens = []struct {
	name, tok string
	showsTok  bool // the message quotes the token itself
}{
	{"empty", "", false},
	{"dot", "a.b", true},
	{"star", "*", true},
	{"chevron", ">", true},
	{"space", "a b", true},
	{"tab", "a\tb", true},
	{"slash", "a/b", true},
	{"unicode", "héllo", true},
	{"emoji", "run-🚀", true},
	{"invalid utf-8", "a\xffb", true},
	{"too long", strings.Repeat("a", 129), false},
}

func TestBadTokensRefused(t *testing.T) {
	for _, bt := range badTokens {
		t.Run(bt.name, func(t *testing.T) {
			checks := []struct {
				field string
				err   error
			}{
				{"suite", events.ValidateToken("suite", bt.tok)},
				{"run", events.ValidateRunID(bt.tok)},
				{"suite", errOf(events.FactSubject(bt.tok, "r1", events.KindRunEnded))},
				{"run", errOf(events.FactSubject("s1", bt.tok, events.KindRunEnded))},
				{"suite", errOf(events.ControlSubject(bt.tok, "r1", events.SignalCancel))},
				{"run", errOf(events.ControlSubject("s1", bt.tok, events.SignalCancel))},
				{"suite", errOf(events.StatusSubject(bt.tok, "r1"))},
				{"run", errOf(events.StatusSubject("s1", bt.tok))},
			}
			for _, c := range checks {
				wantFieldError(t, c.err, events.ErrBadToken, "", c.field)
				if bt.showsTok && c.err != nil && !strings.Contains(c.err.Error(), strconv.Quote(bt.tok)) {
					t.Errorf("message %q does not quote the token", c.err)
				}
			}
		})
	}
}

func TestTokenLimits(t *testing.T) {
	if err := events.ValidateToken("suite", strings.Repeat("a", 128)); err != nil {
		t.Errorf("128-byte token refused: %v", err)
	}
	for _, ok := range []string{"a", "A-z_0", "_leading", "-"} {
		if err := events.ValidateToken("suite", ok); err != nil {
			t.Errorf("token %q refused: %v", ok, err)
		}
	}
	err := events.ValidateToken("suite", strings.Repeat("a", 129))
	if err == nil || !strings.Contains(err.Error(), "129") || !strings.Contains(err.Error(), "128") {
		t.Errorf("too-long token error %v does not give its length and the limit", err)
	}
}

func TestRunIDsMayNotStartWithUnderscore(t *testing.T) {
	for _, run := range []string{"_x", events.SuiteScope, "_"} {
		wantFieldError(t, events.ValidateRunID(run), events.ErrBadToken, "", "run")
		wantFieldError(t, errOf(events.ControlSubject("s1", run, events.SignalCancel)), events.ErrBadToken, "", "run")
		wantFieldError(t, errOf(events.StatusSubject("s1", run)), events.ErrBadToken, "", "run")
		wantFieldError(t, errOf(events.FactSubject("s1", run, events.KindRunEnded)), events.ErrBadToken, "", "run")
	}
	if err := events.ValidateRunID("x_"); err != nil {
		t.Errorf("underscore inside a run ID refused: %v", err)
	}
}

func TestSuiteScopedKindsNeedSuiteScope(t *testing.T) {
	for _, k := range events.Kinds() {
		if !k.SuiteScoped() {
			continue
		}
		wantFieldError(t, errOf(events.FactSubject("s1", "r1", k)), events.ErrInvalidField, k, "run")
		_, _, _, err := events.ParseFactSubject("fact.s1.r1." + string(k))
		wantFieldError(t, err, events.ErrInvalidField, k, "run")
		if _, err := events.FactSubject("s1", events.SuiteScope, k); err != nil {
			t.Errorf("%s in %s refused: %v", k, events.SuiteScope, err)
		}
	}
	want := []events.Kind{events.KindSuiteControlled, events.KindSuiteReported, events.KindSuiteStopped, events.KindSuiteSubmitted}
	var got []events.Kind
	for _, k := range events.Kinds() {
		if k.SuiteScoped() {
			got = append(got, k)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("suite-scoped kinds %v, want %v", got, want)
	}
}

func TestParseFactSubjectRefuses(t *testing.T) {
	for _, tc := range []struct {
		subj     string
		sentinel error
		kind     events.Kind
		field    string
	}{
		{"fact.s1.r1.run.exploded", events.ErrUnknownKind, "", "kind"},
		{"fact.s1.r1.run", events.ErrUnknownKind, "", "kind"},
		{"fact.s1.r1.>", events.ErrUnknownKind, "", "kind"},
		{"fact.s1.r1.", events.ErrUnknownKind, "", "kind"},
		{"fact.s1.r1", events.ErrBadToken, "", "subject"},
		{"fact", events.ErrBadToken, "", "subject"},
		{"", events.ErrBadToken, "", "subject"},
		{"ctl.s1.r1.cancel", events.ErrBadToken, "", "subject"},
		{"facts.s1.r1.run.ended", events.ErrBadToken, "", "subject"},
		{"fact.*.r1.run.ended", events.ErrBadToken, "", "suite"},
		{"fact..r1.run.ended", events.ErrBadToken, "", "suite"},
		{"fact.s1.*.run.ended", events.ErrBadToken, "", "run"},
		{"fact.s1._suite.run.ended", events.ErrBadToken, "", "run"},
	} {
		s, r, k, err := events.ParseFactSubject(tc.subj)
		wantFieldError(t, err, tc.sentinel, tc.kind, tc.field)
		if s != "" || r != "" || k != "" {
			t.Errorf("%q: refused but returned (%q, %q, %q)", tc.subj, s, r, k)
		}
	}
}

func TestFactSubjectRefusesUnknownKind(t *testing.T) {
	wantFieldError(t, errOf(events.FactSubject("s1", "r1", "run.exploded")), events.ErrUnknownKind, "", "kind")
	wantFieldError(t, errOf(events.FactSubject("s1", "r1", "")), events.ErrUnknownKind, "", "kind")
}

func errOf[T any](_ T, err error) error { return err }
