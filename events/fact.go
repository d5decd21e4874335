package events

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Producer names who made a fact: the service role and its instance.
type Producer struct {
	Service  Owner  `msgpack:"service"`
	Instance string `msgpack:"instance"`
}

// Fact is one committed (or about to be committed) entry of the log.
type Fact struct {
	ID             ulid.ULID // unique, time-ordered
	Schema         uint16    // the body's schema version when written
	Suite          string
	Run            string // SuiteScope for suite-scoped kinds
	TaskGeneration uint32 // 1.. for run facts; 0 for suite-scoped facts
	Position       uint64 // 1-based order within the run
	Causation      string // ID of the fact this one answers, or ""
	Producer       Producer
	At             time.Time
	Body           Body
}

// Kind returns the fact's kind, taken from its body.
func (f Fact) Kind() Kind {
	if f.Body == nil {
		return ""
	}
	return f.Body.Kind()
}

// Subject returns the subject the fact is published on.
func (f Fact) Subject() (string, error) { return FactSubject(f.Suite, f.Run, f.Kind()) }

// Meta is everything of a fact but its body and identity.
type Meta struct {
	Suite          string
	Run            string
	TaskGeneration uint32
	Position       uint64
	Causation      string
	Producer       Producer
	At             time.Time // zero means now
}

var (
	entropyMu sync.Mutex
	entropy   = ulid.Monotonic(rand.Reader, 0)
)

// NewID returns a fresh ULID.
func NewID() ulid.ULID {
	entropyMu.Lock()
	defer entropyMu.Unlock()
	return ulid.MustNew(ulid.Now(), entropy)
}

// NewFact builds and validates a fact. This is the one place facts are
// checked before they reach the log; readers trust what it returns.
func NewFact(m Meta, body Body) (Fact, error) {
	at := m.At
	if at.IsZero() {
		at = time.Now()
	}
	f := Fact{
		ID:             NewID(),
		Suite:          m.Suite,
		Run:            m.Run,
		TaskGeneration: m.TaskGeneration,
		Position:       m.Position,
		Causation:      m.Causation,
		Producer:       m.Producer,
		At:             at.UTC().Round(0),
		Body:           body,
	}
	if body != nil {
		f.Schema = body.Kind().Version()
	}
	if err := f.Validate(); err != nil {
		return Fact{}, err
	}
	return f, nil
}

// Validate checks the envelope and the body.
func (f Fact) Validate() error {
	if f.Body == nil {
		return missing("body")
	}
	k := f.Kind()
	spec, ok := kinds[k]
	if !ok {
		return &FieldError{Field: "kind", Reason: fmt.Sprintf("unknown kind %q", k), Err: ErrUnknownKind}
	}
	if f.ID == (ulid.ULID{}) {
		return withKind(k, missing("id"))
	}
	if f.Schema == 0 {
		return withKind(k, missing("schema"))
	}
	if f.Schema > spec.version {
		return &FieldError{Kind: k, Field: "schema",
			Reason: fmt.Sprintf("version %d is newer than this reader's %d", f.Schema, spec.version),
			Err:    ErrUnsupportedVersion}
	}
	if err := ValidateToken("suite", f.Suite); err != nil {
		return withKind(k, err)
	}
	if err := checkScope(f.Run, k); err != nil {
		return withKind(k, err)
	}
	if spec.scope == runScope {
		if err := needPositive("", "task_generation", f.TaskGeneration); err != nil {
			return withKind(k, err)
		}
	} else if f.TaskGeneration != 0 {
		return withKind(k, invalid("task_generation", "suite-scoped facts carry 0, got %d", f.TaskGeneration))
	}
	if err := needPositive("", "position", f.Position); err != nil {
		return withKind(k, err)
	}
	if f.Causation != "" {
		if _, err := ulid.ParseStrict(f.Causation); err != nil {
			return withKind(k, invalid("causation", "not a ULID: %v", err))
		}
	}
	if f.Producer.Service != spec.owner {
		return withKind(k, invalid("producer.service", "%q may not emit %s (owner is %q)", f.Producer.Service, k, spec.owner))
	}
	if err := needString("", "producer.instance", f.Producer.Instance); err != nil {
		return withKind(k, err)
	}
	if f.At.IsZero() {
		return withKind(k, missing("at"))
	}
	return withKind(k, f.Body.validate("body"))
}
