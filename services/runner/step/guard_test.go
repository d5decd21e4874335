package step

import (
	"reflect"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// The core imports only events and the standard library, and nothing of
// the standard library that does I/O or reads a clock.
func TestCoreImportsOnlyEventsAndStdlib(t *testing.T) {
	testutil.CheckPureCore(t, testutil.Module+"events")
}

// A per-call decision is made here and only here: the types that carry one
// have no exported field, so no other package can make one but their zero
// value, which is no decision (the runner's guard test refuses a literal
// of them outside this package, and the runner refuses a zero one).
func TestDecisionsAreMadeOnlyHere(t *testing.T) {
	for _, v := range []any{Plan{}, EffectStep{}, Left{}} {
		typ := reflect.TypeOf(v)
		if typ.NumField() == 0 {
			t.Errorf("%s has no fields", typ)
		}
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				t.Errorf("%s.%s is exported: another package could make a %s", typ, f.Name, typ)
			}
		}
	}
	if (Plan{}).Act() != 0 || (EffectStep{}).Act() != 0 || (Left{}).Act() != 0 {
		t.Error("a zero decision names an act")
	}
}
