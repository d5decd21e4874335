package suites

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// ExistsError is ErrSuiteExists with what differs: the log holds a suite
// of this name submitted with another spec (an edited suite file run again
// under its name), and a suite name holds one roster for good.
type ExistsError struct {
	Name string
	// Had is the spec the log holds; Want the one refused.
	Had, Want events.Digest
	// Differs says what of the spec differs ("trials: 1 in the log, 2 in
	// the file", "case fix-sum changed"), when the log's spec could be
	// read; empty otherwise.
	Differs []string
}

func (e *ExistsError) Error() string {
	what := fmt.Sprintf("spec %s in the log, %s from the file", e.Had, e.Want)
	if len(e.Differs) > 0 {
		what = strings.Join(e.Differs, "; ")
	}
	return fmt.Sprintf("suite %q is already in this log with another roster (%s): one name holds one roster for good", e.Name, what)
}

// Is makes errors.Is(err, ErrSuiteExists) true.
func (e *ExistsError) Is(target error) bool { return target == ErrSuiteExists }

// DiffSpecs says what differs between the spec a log holds (had) and the
// one a file makes (want), one phrase per difference, in the spec's order.
func DiffSpecs(had, want Spec) []string {
	var out []string
	field := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("%s: %s in the log, %s in the file", name, show(a), show(b)))
		}
	}
	field("description", had.Description, want.Description)
	field("split", had.Split, want.Split)
	out = append(out, diffRefs("case", had.Cases, want.Cases)...)
	out = append(out, diffRefs("treatment", had.Treatments, want.Treatments)...)
	field("trials", had.Trials, want.Trials)
	field("required", had.Required, want.Required)
	field("valid_outcomes", had.ValidOutcomes, want.ValidOutcomes)
	field("skipped cases", had.Skipped, want.Skipped)
	field("dataset", had.Dataset, want.Dataset)
	field("stopping", had.Stopping, want.Stopping)
	return out
}

// diffRefs names the cases (or treatments) one spec has and the other
// lacks, and those whose content changed.
func diffRefs(what string, had, want []events.Ref) []string {
	digest := func(refs []events.Ref, id string) (events.Digest, bool) {
		i := slices.IndexFunc(refs, func(r events.Ref) bool { return r.ID == id })
		if i < 0 {
			return "", false
		}
		return refs[i].Digest, true
	}
	var out []string
	for _, r := range want {
		switch d, ok := digest(had, r.ID); {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s is new", what, r.ID))
		case d != r.Digest:
			out = append(out, fmt.Sprintf("%s %s changed", what, r.ID))
		}
	}
	for _, r := range had {
		if _, ok := digest(want, r.ID); !ok {
			out = append(out, fmt.Sprintf("%s %s was left out", what, r.ID))
		}
	}
	if len(out) == 0 && !slices.Equal(had, want) {
		out = append(out, fmt.Sprintf("the order of the %ss", what))
	}
	return out
}

// show renders a spec value for a message: compact JSON, "none" for
// nothing.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == `""` || string(b) == "[]" {
		return "none"
	}
	return string(b)
}
