package suites

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const stopBase = "name: x\ncases: [{path: a}]\ntreatments: [{path: b}]\n"

func TestAStoppingBlockTakesItsDefaults(t *testing.T) {
	f, err := Parse("s.yaml", []byte(stopBase+"stopping: {comparison: 'off  vs on'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Stopping
	if a, b := s.Treatments(); a != "off" || b != "on" || s.Confidence != 0.95 || s.MinPairs != 10 || s.Margin != 0 {
		t.Fatalf("stopping %+v (a=%q b=%q)", s, a, b)
	}
}

func TestABadStoppingBlockIsRefusedByField(t *testing.T) {
	for _, c := range []struct{ block, want string }{
		{"stopping: {comparison: off}\n", `s.yaml:4: stopping.comparison: want "A vs B"`},
		{"stopping: {comparison: 'on vs on'}\n", "stopping.comparison: compares on with itself"},
		{"stopping: {comparison: 'a.b vs on'}\n", "stopping.comparison"},
		{"stopping: {comparison: 'off vs on', confidence: 95}\n", "stopping.confidence: want a level between 0 and 1"},
		{"stopping: {comparison: 'off vs on', margin: -0.1}\n", "stopping.margin"},
		{"stopping: {comparison: 'off vs on', min_pairs: 2.5}\n", "stopping.min_pairs"},
		{"stopping: {comparison: 'off vs on', stop_at: 3}\n", "stop_at"},
	} {
		_, err := Parse("s.yaml", []byte(stopBase+c.block))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.block, err, c.want)
		}
	}
}

// The comparison names treatments of the suite; a typo is found when the
// suite is loaded, before anything is submitted.
func TestAStoppingComparisonNamesTreatmentsOfTheSuite(t *testing.T) {
	demo, err := os.ReadFile("../examples/demo/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../examples/demo")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "suite.yaml")
	write(t, path, string(demo)+"stopping: {comparison: 'stall-off vs stall-onn'}\n")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `stopping.comparison: no treatment "stall-onn" in the suite`) {
		t.Fatalf("got %v", err)
	}
	write(t, path, string(demo)+"stopping: {comparison: 'stall-off vs stall-on'}\n")
	if _, err := Load(path); err != nil {
		t.Fatalf("a comparison of the suite's treatments: %v", err)
	}
}

// A stopping rule may name a scorer, which some case of the suite must
// declare; a typo is found when the suite loads.
func TestAStoppingScorerIsDeclaredByACaseOfTheSuite(t *testing.T) {
	f, err := Parse("s.yaml", []byte(stopBase+"stopping: {comparison: 'off vs on', scorer: quality}\n"))
	if err != nil || f.Stopping.Scorer != "quality" {
		t.Fatalf("%+v, %v", f, err)
	}
	if _, err := Parse("s.yaml", []byte(stopBase+"stopping: {comparison: 'off vs on', scorer: 'a b'}\n")); err == nil ||
		!strings.Contains(err.Error(), "stopping.scorer") {
		t.Fatalf("a bad scorer ID: %v", err)
	}
	demo, err := os.ReadFile("../examples/demo/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../examples/demo")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "suite.yaml")
	write(t, path, string(demo)+"stopping: {comparison: 'stall-off vs stall-on', scorer: passing}\n")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `stopping.scorer: no case of the suite declares the scorer "passing"`) {
		t.Fatalf("got %v", err)
	}
	kase := filepath.Join(dir, "cases/fix-sum/case.yaml")
	data, err := os.ReadFile(kase)
	if err != nil {
		t.Fatal(err)
	}
	write(t, kase, string(data)+"  scorers:\n    - {id: passing, instrument: tests}\n")
	if _, err := Load(path); err != nil {
		t.Fatalf("a scorer a case declares: %v", err)
	}
}
