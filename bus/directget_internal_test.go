package bus

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

// A direct get the server answers with 503 (its stream has no leader for a
// moment, as while a cluster replaces one) is the bus failing, not the
// work: it is transient, so the run is handed back or retried in place,
// never ended errored ("harness: direct get: status 503", seen in
// TestFaultLoseTheStreamLeader). A 400 is not.
func TestDirectGetUnavailableIsTransient(t *testing.T) {
	for status, want := range map[string]bool{"503": true, "408": true, "400": false} {
		m := nats.NewMsg("reply")
		m.Header.Set("Status", status)
		m.Header.Set("Description", "whatever the server says")
		err := fmt.Errorf("load run s/r: %w", directGetStatus(m))
		if got := Transient(err); got != want {
			t.Errorf("status %s: transient %v, want %v (%v)", status, got, want, err)
		}
	}
}
