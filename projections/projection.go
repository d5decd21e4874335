// Package projections holds factline's fold framework and the built-in
// projections. A projection is a deterministic fold over facts with no I/O:
// the same facts in the same order always give the same state, whether they
// come from the live stream or from an exported file. The replay driver that
// feeds projections lives in projections/replay.
package projections

import (
	"fmt"
	"slices"
	"sync"

	"github.com/factline/factline/events"
)

// Fold describes a projection with state of type S.
type Fold[S any] struct {
	// Key names the projection on the command line and in the position
	// bucket: a subject token (letters, digits, '-', '_').
	Key string
	// Help says in one line what the projection shows.
	Help string
	// Init returns the empty state.
	Init func() S
	// Apply folds one fact into the state. It must be deterministic and do
	// no I/O; it may mutate and return s.
	Apply func(s S, f events.Fact) S
	// View turns the state into what is printed (as JSON or text); nil
	// prints the state itself.
	View func(s S) any
}

// Projection is a fold with its type erased, as the registry and the replay
// driver handle it.
type Projection interface {
	// Name identifies the projection.
	Name() string
	// Doc describes it in one line.
	Doc() string
	// Start returns a fresh instance with empty state.
	Start() Instance
}

// Instance is a projection being fed.
type Instance interface {
	// Apply folds one fact.
	Apply(f events.Fact)
	// View returns the current state for printing.
	View() any
}

// Name implements Projection.
func (f Fold[S]) Name() string { return f.Key }

// Doc implements Projection.
func (f Fold[S]) Doc() string { return f.Help }

// Start implements Projection.
func (f Fold[S]) Start() Instance { return &instance[S]{fold: f, state: f.Init()} }

type instance[S any] struct {
	fold  Fold[S]
	state S
}

func (i *instance[S]) Apply(f events.Fact) { i.state = i.fold.Apply(i.state, f) }

func (i *instance[S]) View() any {
	if i.fold.View != nil {
		return i.fold.View(i.state)
	}
	return i.state
}

// State returns the typed state of an instance started from this fold.
func (f Fold[S]) State(in Instance) (S, bool) {
	i, ok := in.(*instance[S])
	if !ok {
		var zero S
		return zero, false
	}
	return i.state, true
}

var (
	regMu    sync.RWMutex
	registry = map[string]Projection{}
)

// Register adds a projection to the registry; the CLI's replay command finds
// it there by name. It panics on a bad or duplicate name: registration
// happens at init time and a clash is a programming error.
func Register(p Projection) {
	if err := events.ValidateToken("projection name", p.Name()); err != nil {
		panic(fmt.Sprintf("projections: %v", err))
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[p.Name()]; dup {
		panic(fmt.Sprintf("projections: %q registered twice", p.Name()))
	}
	registry[p.Name()] = p
}

// Lookup finds a registered projection.
func Lookup(name string) (Projection, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	if p, ok := registry[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("no projection named %q (have: %v)", name, namesLocked())
}

// All returns every registered projection, sorted by name.
func All() []Projection {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Projection, 0, len(registry))
	for _, n := range namesLocked() {
		out = append(out, registry[n])
	}
	return out
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
