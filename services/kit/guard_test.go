package kit_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// The kit serves the services and knows none of them: it imports no
// service (nor a service's core), so services can import it without a
// cycle and without one service reaching another through it.
func TestTheKitImportsNoService(t *testing.T) {
	for _, name := range testutil.SourceFiles(t, "*.go", "*/*.go") {
		for _, p := range testutil.Imports(t, name) {
			if strings.HasPrefix(p, testutil.Module+"services/") && !strings.HasPrefix(p, testutil.Module+"services/kit") {
				t.Errorf("%s imports %s: the kit must not know the services", name, p)
			}
		}
	}
}
