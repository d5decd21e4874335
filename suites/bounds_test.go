package suites

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Every count and size a suite file sets has a documented bound, and
// going past it is refused naming the field and the limit.
func TestSuiteBounds(t *testing.T) {
	head := "name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\n"
	many := func(key string, n int) string {
		var b strings.Builder
		b.WriteString("name: x\n")
		for _, k := range []string{"cases", "treatments"} {
			b.WriteString(k + ": [")
			count := 1
			if k == key {
				count = n
			}
			for i := range count {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "{path: p%d}", i)
			}
			b.WriteString("]\n")
		}
		return b.String()
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"zero trials", head + "trials: 0\n", "s.yaml:4: trials: 0 is too few (at least 1; leave trials out for 1)"},
		{"negative trials", head + "trials: -3\n", "s.yaml:4: trials: -3 is too few (at least 1"},
		{"fractional trials", head + "trials: 1.5\n", "s.yaml:4: trials: want a whole number, got 1.5"},
		{"huge trials", head + "trials: 100000000\n", fmt.Sprintf("s.yaml:4: trials: 100000000 is too large (at most %d)", MaxTrials)},
		{"many cases", many("cases", MaxCases+1), fmt.Sprintf("s.yaml:2: cases: %d entries; a suite has at most %d", MaxCases+1, MaxCases)},
		{"many treatments", many("treatments", MaxTreatments+1), fmt.Sprintf("s.yaml:3: treatments: %d entries; a suite has at most %d", MaxTreatments+1, MaxTreatments)},
		{"long description", head + "description: " + strings.Repeat("d", MaxDescription+1) + "\n",
			fmt.Sprintf("s.yaml:4: description: %d bytes; the limit is %d", MaxDescription+1, MaxDescription)},
	} {
		_, err := Parse("s.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got  %.300v\n want %q", c.name, err, c.want)
		}
	}
	// The limits themselves are accepted.
	if f, err := Parse("s.yaml", []byte(head+fmt.Sprintf("trials: %d\ndescription: %s\n", MaxTrials, strings.Repeat("d", MaxDescription)))); err != nil || f.Trials != MaxTrials {
		t.Fatalf("the limits: %v", err)
	}

	// A suite file larger than MaxFileBytes is refused before it is parsed.
	big := tree(t, map[string]string{"suite.yaml": head + "# " + strings.Repeat("x", MaxFileBytes) + "\n"})
	if _, err := Load(filepath.Join(big, "suite.yaml")); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the limit for a suite file is %d bytes", MaxFileBytes)) {
		t.Errorf("a %d-byte suite file: %v", MaxFileBytes+100, err)
	}

	// The roster as a whole is bounded: cases × treatments × trials.
	files := suiteFiles(goodSuite)
	var entries []string
	n := MaxRuns/MaxTrials + 1
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		files["cases/"+id+".yaml"] = "id: " + id + "\ninstruction: x\n"
		files["treatments/scripts/"+id+".yaml"] = "turns: []\n"
		entries = append(entries, "{path: cases/"+id+".yaml}")
	}
	files["suite.yaml"] = fmt.Sprintf("name: big\ncases: [%s]\ntreatments: [{path: treatments/base.yaml}]\ntrials: %d\n",
		strings.Join(entries, ", "), MaxTrials)
	_, err := Load(filepath.Join(tree(t, files), "suite.yaml"))
	want := fmt.Sprintf("trials: %d cases × 1 treatments × %d trials = %d runs; a suite has at most %d", n, MaxTrials, n*MaxTrials, MaxRuns)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a roster of %d runs: %v, want %q", n*MaxTrials, err, want)
	}
}
