package metrics

import (
	"encoding/json"
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

// The dashboard works on any Prometheus a team names (a datasource
// variable, never a fixed one) and on a chosen set of instances: every
// panel and query uses the variable, and every query filters by instance.
func TestDashboardHasVariables(t *testing.T) {
	data, err := os.ReadFile("../grafana/factline.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct{ Name, Type string } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["instance"] != "query" {
		t.Fatalf("variables %v, want a datasource variable and an instance variable", vars)
	}
	metric := regexp.MustCompile(`factline_[a-z_]+(\{[^}]*\})?`)
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q uses datasource %q", p.Title, p.Datasource.UID)
		}
		for _, q := range p.Targets {
			if q.Datasource.UID != "${datasource}" {
				t.Errorf("a query of panel %q uses datasource %q", p.Title, q.Datasource.UID)
			}
			for _, m := range metric.FindAllString(q.Expr, -1) {
				if !strings.Contains(m, `instance=~"$instance"`) {
					t.Errorf("panel %q: %s does not filter by instance", p.Title, m)
				}
			}
		}
	}
}
