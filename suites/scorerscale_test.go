package suites

import (
	"path/filepath"
	"strings"
	"testing"
)

// One scorer ID is one measurement across the suite: the report averages
// its values over cases on one scale and direction, so two cases that
// declare it on different scales (or directions) are refused when the
// suite loads, naming both; the same declaration in every case, or a
// differing one in a case of another split, loads.
func TestAScorerIDHasOneScaleAcrossTheSuite(t *testing.T) {
	withScorer := func(id, scorer string) string {
		return strings.ReplaceAll(caseYAML, "%s", id) +
			"    - {id: bench, kind: command, command: ./bench.sh, score: {format: json_line}}\n" +
			"  scorers:\n    - " + scorer + "\n"
	}
	load := func(add, mul, hold string) error {
		files := suiteFiles(goodSuite)
		files["cases/add/case.yaml"] = withScorer("add", add)
		files["cases/mul/case.yaml"] = withScorer("mul", mul)
		files["cases/hold/case.yaml"] = withScorer("hold", hold)
		_, err := Load(filepath.Join(tree(t, files), "suite.yaml"))
		return err
	}
	unit := "{id: quality, instrument: bench, scale: [0, 1]}"
	signed := "{id: quality, instrument: bench, scale: [-1, 1]}"
	lower := "{id: quality, instrument: bench, scale: [0, 1], higher_is_better: false}"
	if err := load(unit, unit, signed); err != nil {
		t.Fatalf("one scale in the suite's cases (another in a holdout case): %v", err)
	}
	err := load(unit, signed, unit)
	if err == nil || !strings.Contains(err.Error(), `scorer "quality"`) ||
		!strings.Contains(err.Error(), "case add") || !strings.Contains(err.Error(), "case mul") ||
		!strings.Contains(err.Error(), "[0, 1]") || !strings.Contains(err.Error(), "[-1, 1]") {
		t.Fatalf("two scales for one scorer: %v", err)
	}
	if err := load(unit, lower, unit); err == nil || !strings.Contains(err.Error(), "lower is better") {
		t.Fatalf("two directions for one scorer: %v", err)
	}
}
