package testutil

import (
	"encoding/json"
	"testing"
)

// ReportWithoutWallTimes is a JSON report with what no two runs of one
// suite share, its wall times ("wall_millis", "millis" at any depth), set
// to zero: the form in which a report after faults is compared with the
// fault-free one.
func ReportWithoutWallTimes(t testing.TB, report []byte) string {
	t.Helper()
	var r map[string]any
	if err := json.Unmarshal(report, &r); err != nil {
		t.Fatalf("report does not parse: %v\n%s", err, report)
	}
	var walk func(any)
	walk = func(x any) {
		switch v := x.(type) {
		case map[string]any:
			for k, e := range v {
				if k == "wall_millis" || k == "millis" {
					v[k] = 0
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(r)
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	return string(out)
}
