package events_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

func claimWith(c *events.Containment) events.RunClaimed {
	return events.RunClaimed{Runner: "runner-a", Lease: 1, Containment: c}
}

func TestContainmentFeaturesSortedWithoutRepeats(t *testing.T) {
	c := &events.Containment{Provider: "process", Features: []events.ContainmentFeature{
		{Name: "session", State: events.ContainmentActive},
		{Name: "cpu_seconds", State: events.ContainmentActive, Limit: 60},
	}}
	_, err := newFact(claimWith(c))
	wantFieldError(t, err, events.ErrInvalidField, events.KindRunClaimed, "body.containment.features[1].name")

	c.Features[1].Name = "session"
	_, err = newFact(claimWith(c))
	wantFieldError(t, err, events.ErrInvalidField, events.KindRunClaimed, "body.containment.features[1].name")
}

func TestContainmentFeatureNeedsKnownState(t *testing.T) {
	c := &events.Containment{Provider: "process", Features: []events.ContainmentFeature{{Name: "network_isolation", State: "probably"}}}
	_, err := newFact(claimWith(c))
	wantFieldError(t, err, events.ErrInvalidField, events.KindRunClaimed, "body.containment.features[0].state")

	c.Features[0].State = ""
	_, err = newFact(claimWith(c))
	wantFieldError(t, err, events.ErrMissingField, events.KindRunClaimed, "body.containment.features[0].state")
}

func TestContainmentNeedsProvider(t *testing.T) {
	_, err := newFact(claimWith(&events.Containment{}))
	wantFieldError(t, err, events.ErrMissingField, events.KindRunClaimed, "body.containment.provider")
}

func TestContainmentFeatureLookup(t *testing.T) {
	f := mustNewFact(t, claimWith(&events.Containment{Provider: "process", Features: []events.ContainmentFeature{
		{Name: "processes", State: events.ContainmentUnsupported, Detail: "RLIMIT_NPROC does not bind uid 0"},
	}}))
	got, ok := f.Body.(events.RunClaimed).Containment.Feature("processes")
	if !ok || got.State != events.ContainmentUnsupported {
		t.Errorf("Feature(processes) = %+v, %v", got, ok)
	}
	if _, ok := (*events.Containment)(nil).Feature("processes"); ok {
		t.Error("a nil containment reported a feature")
	}
}

// grade.instrument carries the grader's containment under the same rules,
// and a fact without it (an older grader's, or a non-command instrument's)
// is still valid and encodes without the key.
func TestGradeInstrumentContainmentIsValidated(t *testing.T) {
	gi := events.GradeInstrument{SnapshotDigest: events.DigestOf([]byte("snap")), Result: events.InstrumentResult{
		Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed,
	}, Containment: &events.Containment{Provider: "process", Features: []events.ContainmentFeature{{Name: "session", State: "maybe"}}}}
	_, err := newFact(gi)
	wantFieldError(t, err, events.ErrInvalidField, events.KindGradeInstrument, "body.containment.features[0].state")

	gi.Containment = nil
	f := mustNewFact(t, gi)
	b, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("containment")) {
		t.Error("a grade.instrument without containment encodes the key")
	}
}

// A containment record stored as a blob reads back as itself, the bytes
// must be the ones its digest names, and a claim holds the record or its
// digest, never both.
func TestAContainmentBlobReadsBackAndAClaimHoldsOneForm(t *testing.T) {
	rec := *goldenContainer()
	data, d, err := events.ContainmentBlob(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.DecodeContainmentBlob(data, d)
	if err != nil || !reflect.DeepEqual(*got, rec) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if again, d2, _ := events.ContainmentBlob(rec); d2 != d || !bytes.Equal(again, data) {
		t.Fatal("one record has two encodings")
	}
	if _, err := events.DecodeContainmentBlob(append(slices.Clone(data), ' '), d); err == nil {
		t.Fatal("bytes that are not the digest's were read")
	}
	meta := events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: 1, Producer: events.Producer{Service: events.OwnerRunner, Instance: "x"}}
	if _, err := events.NewFact(meta, events.RunClaimed{Runner: "x", Lease: 1, ContainmentDigest: d}); err != nil {
		t.Fatalf("a claim naming its containment's blob: %v", err)
	}
	_, err = events.NewFact(meta, events.RunClaimed{Runner: "x", Lease: 1, Containment: &rec, ContainmentDigest: d})
	if !errors.Is(err, events.ErrInvalidField) || !strings.Contains(err.Error(), "containment_digest") {
		t.Fatalf("a claim holding both: %v, want an invalid containment_digest", err)
	}
}
