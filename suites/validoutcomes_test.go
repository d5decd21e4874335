package suites

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// valid_outcomes: [] counts no attempt at all; taking it as the default
// would silently measure by a rule its author did not write, so it is
// refused the way trials: 0 is.
func TestAnEmptyValidOutcomesIsRefused(t *testing.T) {
	path := datasetSuite(t, "d.jsonl", "{\"q\": \"x\"}\n", plainTmpl, "")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, string(data)+"valid_outcomes: []\n")
	_, err = Load(path)
	if err == nil || !strings.Contains(err.Error(), filepath.Base(path)+":6: valid_outcomes: ") || !strings.Contains(err.Error(), "leave valid_outcomes out") {
		t.Errorf("got %v, want valid_outcomes: [] refused naming the field", err)
	}
	write(t, path, string(data))
	if _, err := Load(path); err != nil {
		t.Errorf("without valid_outcomes: %v", err)
	}
}
