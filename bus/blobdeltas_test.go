package bus_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/blobdelta"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// grownRequest is a request body after n turns: every turn adds a message
// between an unchanged start and an unchanged end, as a model request
// grows.
func grownRequest(n int) []byte {
	var s strings.Builder
	s.WriteString(`{"messages":[{"role":"system","content":"` + strings.Repeat("be brief ", 40) + `"}`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&s, `,{"role":"assistant","content":"turn %d: let me list the files","tool_calls":[{"id":"c%d","name":"list_files"}]}`, i, i)
	}
	s.WriteString(`],"tools":[{"name":"list_files","parameters":{"type":"object"}}],"settings":{"model":"m"}}`)
	return []byte(s.String())
}

// Versions of a growing request stored one after another are stored as
// what each added, at most MaxDeltaDepth deltas deep, and every one reads
// back whole and exact, by Get and by GetTo, again and again.
func TestBlobVersionsAreStoredAsDeltas(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const n = 2*bus.MaxDeltaDepth + 5
	var prev *bus.BlobVersion
	var digests []events.Digest
	for i := range n {
		data := grownRequest(i)
		v, err := b.Blobs().PutAfter(ctx, data, prev)
		if err != nil {
			t.Fatal(err)
		}
		if v.Digest != events.DigestOf(data) {
			t.Fatalf("version %d named %s, its bytes are %s", i, v.Digest, events.DigestOf(data))
		}
		digests = append(digests, v.Digest)
		prev = v
	}
	added := len(grownRequest(1)) - len(grownRequest(0))
	wholes := 0
	for i, d := range digests {
		want := grownRequest(i)
		got, err := b.Blobs().Get(ctx, d)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("version %d: Get %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
		for range 2 { // a reader's changes never reach what the bus keeps
			got[0] ^= 0xff
			if got, err = b.Blobs().Get(ctx, d); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("version %d read again: %v", i, err)
			}
		}
		var out bytes.Buffer
		if m, err := b.Blobs().GetTo(ctx, d, &out); err != nil || m != int64(len(want)) || !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("version %d: GetTo %d bytes, %v", i, m, err)
		}
		st, err := b.Blobs().Stat(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Depth > bus.MaxDeltaDepth {
			t.Fatalf("version %d is %d deltas deep", i, st.Depth)
		}
		if st.Depth == 0 {
			wholes++
			continue
		}
		// A delta holds the added message and a few bytes naming its base.
		if st.Size > uint64(added+100) {
			t.Errorf("version %d (depth %d) stores %d bytes; it added %d", i, st.Depth, st.Size, added)
		}
	}
	// The first version, and one every MaxDeltaDepth+1 after it.
	if want := (n + bus.MaxDeltaDepth) / (bus.MaxDeltaDepth + 1); wholes != want {
		t.Errorf("%d versions stored whole, want %d", wholes, want)
	}
}

// A store written before deltas holds every blob whole: it reads as
// before, and a version stored after one of its blobs is a delta of it. A
// version that shares too little with its base is stored whole.
func TestBlobVersionsOverWholeBlobs(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	old := grownRequest(3)
	d, err := b.Blobs().Put(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Blobs().Get(ctx, d); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("whole blob: %v", err)
	}
	base, err := b.Blobs().PutAfter(ctx, old, nil) // already stored: left whole
	if err != nil {
		t.Fatal(err)
	}
	next, err := b.Blobs().PutAfter(ctx, grownRequest(4), base)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Blobs().Stat(ctx, next.Digest); err != nil || st.Depth != 1 {
		t.Fatalf("stored after a whole blob: %+v, %v; want a delta of depth 1", st, err)
	}
	other := bytes.Repeat([]byte("nothing in common "), 40)
	v, err := b.Blobs().PutAfter(ctx, other, next)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Blobs().Stat(ctx, v.Digest); err != nil || st.Depth != 0 || st.Size != uint64(len(other)) {
		t.Fatalf("unrelated version: %+v, %v; want it whole", st, err)
	}
	if got, err := b.Blobs().Get(ctx, next.Digest); err != nil || !bytes.Equal(got, grownRequest(4)) {
		t.Fatalf("delta over a whole blob: %v", err)
	}
}

// A delta whose base is missing, or whose chain never reaches a whole
// blob (a cycle), or that rebuilds other bytes than its name, is a corrupt
// store: the read fails with ErrBlobCorrupt at once and does not loop.
func TestCorruptBlobDeltasAreRefused(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	js, err := jetstream.New(b.Conn())
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, bus.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	putDelta := func(name events.Digest, d blobdelta.Delta) {
		t.Helper()
		meta := jetstream.ObjectMeta{Name: name.Hex(), Metadata: map[string]string{"factline-encoding": "delta", "factline-depth": "1"}}
		if _, err := obs.Put(ctx, meta, bytes.NewReader(d.Encode())); err != nil {
			t.Fatal(err)
		}
	}
	missing := events.DigestOf([]byte("never stored"))
	a, c := events.DigestOf([]byte("a")), events.DigestOf([]byte("c"))
	putDelta(a, blobdelta.Delta{Base: string(missing), Middle: []byte("a")})
	putDelta(c, blobdelta.Delta{Base: string(c), Middle: []byte("c")}) // its own base
	base, err := b.Blobs().Put(ctx, []byte("base"))
	if err != nil {
		t.Fatal(err)
	}
	wrong := events.DigestOf([]byte("bXse"))
	putDelta(wrong, blobdelta.Delta{Base: string(base), Prefix: 1, Suffix: 2, Middle: []byte("a")}) // rebuilds "base"
	bad := events.DigestOf([]byte("junk"))
	putDelta(bad, blobdelta.Delta{Base: "not a digest", Middle: []byte("junk")})
	for name, d := range map[string]events.Digest{"missing base": a, "cycle": c, "wrong bytes": wrong, "bad base name": bad} {
		_, err := b.Blobs().Get(ctx, d)
		if !errors.Is(err, bus.ErrBlobCorrupt) {
			t.Errorf("%s: Get %v, want ErrBlobCorrupt", name, err)
		}
		if _, err := b.Blobs().GetTo(ctx, d, &bytes.Buffer{}); !errors.Is(err, bus.ErrBlobCorrupt) {
			t.Errorf("%s: GetTo %v, want ErrBlobCorrupt", name, err)
		}
	}
}

// BenchmarkGetBlobByDepth reads requests stored at the end of a chain of
// deltas, up to as deep as a write allows: what a reader (the viewer, an
// audit) pays for the bytes a writer saved. "cold" reads a chain no read
// has rebuilt before; "in-order" reads every version of one chain oldest
// first, as a reader going through a run's turns does, and reports the
// time per read. Each iteration stores a chain of its own (not timed).
func BenchmarkGetBlobByDepth(b *testing.B) {
	bb, _ := bustest.Start(b)
	ctx := testCtxTB(b)
	chain := func(salt, n int) []events.Digest {
		var prev *bus.BlobVersion
		var out []events.Digest
		for i := range n {
			v, err := bb.Blobs().PutAfter(ctx, append(grownRequest(i), fmt.Sprintf(" %d", salt)...), prev)
			if err != nil {
				b.Fatal(err)
			}
			out, prev = append(out, v.Digest), v
		}
		return out
	}
	salt := 0
	for _, depth := range []int{0, 8, bus.MaxDeltaDepth} {
		b.Run(fmt.Sprintf("cold/depth=%d", depth), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				salt++
				top := chain(salt, depth+1)[depth]
				b.StartTimer()
				if _, err := bb.Blobs().Get(ctx, top); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run(fmt.Sprintf("in-order/%d-versions", bus.MaxDeltaDepth+1), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			salt++
			ds := chain(salt, bus.MaxDeltaDepth+1)
			b.StartTimer()
			for _, d := range ds {
				if _, err := bb.Blobs().Get(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(bus.MaxDeltaDepth+1)), "ns/read")
	})
}
