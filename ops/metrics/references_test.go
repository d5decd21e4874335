package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every metric the dashboard and the alert rules reference is one the
// services export (with the histogram suffixes Prometheus adds).
func TestDashboardsAndAlertsReferenceRealMetrics(t *testing.T) {
	families, err := Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range families {
		known[f.GetName()] = true
	}
	// Vectors without observations are not gathered; register their
	// names from the declarations.
	for _, name := range declared {
		known[name] = true
	}
	re := regexp.MustCompile(`factline_[a-z_]+`)
	for _, file := range []string{"../prometheus/alerts.yaml", "../grafana/factline.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		refs := re.FindAllString(string(data), -1)
		if len(refs) == 0 {
			t.Fatalf("%s references no metric", file)
		}
		for _, ref := range refs {
			base := ref
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !known[ref] && !known[base] {
				t.Errorf("%s references %s, which no service exports", file, ref)
			}
		}
	}
}
