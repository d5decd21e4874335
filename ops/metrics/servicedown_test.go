package metrics_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/factline/factline/fleet"
)

// FactlineServiceDown lists the services a fleet needs by name, and finds
// their targets by the service label the shipped scrape configuration
// gives them: a service added to the fleet, or a target labelled
// otherwise, would never be reported down. Both name exactly the fleet's
// services.
func TestServiceDownCoversEveryService(t *testing.T) {
	want := fleet.Names()
	for _, c := range []struct{ file, pattern string }{
		{"../prometheus/alerts.yaml", `label_replace\(vector\(1\), "service", "([a-z]+)", "", ""\)`},
		{"../../deploy/compose/prometheus/prometheus.yml", `labels: \{service: ([a-z]+)\}`},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range regexp.MustCompile(c.pattern).FindAllStringSubmatch(string(data), -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s names the services %v, want the fleet's %v", c.file, got, want)
		}
	}
}
