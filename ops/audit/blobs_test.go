package audit

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// With the blobs the store holds, every blob ref of a fact whose blob is
// not held is a blob-held violation naming the fact (its sequence when
// known), kind, field and digest; an identity is no blob ref, and a store
// that holds every blob passes. The audit checked nothing about blobs.
func TestABlobRefTheStoreDoesNotHoldIsAViolation(t *testing.T) {
	l := clean(t)
	x := events.DigestOf([]byte("x")) // every blob ref of the clean run
	lost := events.DigestOf([]byte("the second request"))
	identity := events.DigestOf([]byte("an agent identity"))
	l.facts = l.facts[:2] // claimed, turn 1 started
	l.add(events.TurnStarted{Turn: 2, ContextDigest: lost})
	l.run = "r2"
	l.add(events.RunClaimed{Runner: "a", Lease: 1, Identity: identity})
	held := func(d events.Digest) bool { return d == x }
	seqs := []uint64{11, 12, 13, 14}

	vs := Check(l.facts, Options{Blobs: held, Seqs: seqs})
	var blob []Violation
	for _, v := range vs {
		if v.Rule == RuleBlobHeld {
			blob = append(blob, v)
		}
	}
	if len(blob) != 1 {
		t.Fatalf("blob-held violations %v, want one (the lost request); all: %v", blob, vs)
	}
	v := blob[0]
	for _, want := range []string{"message 13", "turn.started", "context_digest", string(lost), "a turn's request"} {
		if v.Suite != "s" || v.Run != "r" || !strings.Contains(v.Detail, want) {
			t.Errorf("violation %v does not name %q (or is not of s/r)", v, want)
		}
	}

	if !strings.Contains(v.Detail, "which the store does not hold") {
		t.Errorf("violation %v does not say the store does not hold it", v)
	}
	// Told what holds the blobs (an export file), the violation names it.
	vs = Check(l.facts, Options{Blobs: held, Seqs: seqs, BlobsWhere: "the export"})
	for _, v := range vs {
		if v.Rule == RuleBlobHeld && !strings.Contains(v.Detail, "which the export does not hold") {
			t.Errorf("violation %v does not say the export does not hold it", v)
		}
	}

	// Without sequences the fact is named by its position.
	vs = Check(l.facts, Options{Blobs: held})
	if got := rules(vs); !strings.Contains(got, RuleBlobHeld) {
		t.Fatalf("rules %q", got)
	}
	for _, v := range vs {
		if v.Rule == RuleBlobHeld && !strings.Contains(v.Detail, "position 3") {
			t.Errorf("violation %v does not name the fact's position", v)
		}
	}

	// A store that holds every blob, and an audit not told the blobs,
	// report none.
	all := func(events.Digest) bool { return true }
	for _, opts := range []Options{{Blobs: all}, {}} {
		if got := rules(Check(l.facts, opts)); strings.Contains(got, "blob") {
			t.Errorf("rules %q with %+v", got, opts)
		}
	}
	if vs := Check(clean(t).facts, Options{Sink: map[string]int{"r/t1/c": 1}, Finished: true, Blobs: held}); len(vs) != 0 {
		t.Fatalf("violations in a clean run whose blobs are held: %v", vs)
	}
}

// A blob held as a delta whose base the store does not hold cannot be
// read: told so by MissingBase, the audit names the fact, the field, the
// blob and the missing base under blob-held; a blob whose chain is whole
// passes.
func TestADeltaWithoutItsBaseIsAViolation(t *testing.T) {
	l := clean(t)
	x := events.DigestOf([]byte("x"))
	base := events.DigestOf([]byte("the first request"))
	l.facts = l.facts[:2]
	l.add(events.TurnStarted{Turn: 2, ContextDigest: x})
	all := func(events.Digest) bool { return true }
	missing := func(d events.Digest) events.Digest {
		if d == x {
			return base
		}
		return ""
	}
	var blob []Violation
	for _, v := range Check(l.facts, Options{Blobs: all, MissingBase: missing}) {
		if v.Rule == RuleBlobHeld {
			blob = append(blob, v)
		}
	}
	// Both turns name x: each fact that names it is named.
	if len(blob) != 2 {
		t.Fatalf("blob-held violations %v, want two (each turn naming the delta)", blob)
	}
	for _, want := range []string{"turn.started", "context_digest", "names blob " + string(x), "delta of blob " + string(base) + ", which the store does not hold"} {
		if !strings.Contains(blob[1].Detail, want) {
			t.Errorf("violation %v does not say %q", blob[1], want)
		}
	}
	none := func(events.Digest) events.Digest { return "" }
	if got := rules(Check(l.facts, Options{Blobs: all, MissingBase: none})); strings.Contains(got, "blob") {
		t.Errorf("rules %q with every chain whole", got)
	}
}
