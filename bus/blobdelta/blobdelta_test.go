package blobdelta

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// A delta made of any two blobs rebuilds the second from the first, through
// its stored form, and keeps only what lies between their common start and
// end.
func TestMakeEncodeDecodeApplyRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	blob := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab{}"[r.IntN(4)] // a small alphabet: long common runs
		}
		return b
	}
	cases := [][2][]byte{
		{nil, nil}, {nil, []byte("x")}, {[]byte("x"), nil},
		{[]byte("aaaa"), []byte("aa")}, {[]byte("aa"), []byte("aaaa")},
		{[]byte(`{"messages":[1],"tools":[]}`), []byte(`{"messages":[1,2],"tools":[]}`)},
	}
	for range 500 {
		base := blob(r.IntN(64))
		full := append(append(append([]byte{}, base[:r.IntN(len(base)+1)]...), blob(r.IntN(16))...), base[r.IntN(len(base)+1):]...)
		cases = append(cases, [2][]byte{base, full})
	}
	for i, c := range cases {
		base, full := c[0], c[1]
		d := Make("sha256:base", base, full)
		if d.Size() != uint64(len(full)) {
			t.Fatalf("case %d: size %d, want %d", i, d.Size(), len(full))
		}
		got, err := Decode(d.Encode())
		if err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		if got.Base != "sha256:base" || got.Prefix != d.Prefix || got.Suffix != d.Suffix || !bytes.Equal(got.Middle, d.Middle) {
			t.Fatalf("case %d: decoded %+v, made %+v", i, got, d)
		}
		out, err := got.Apply(base)
		if err != nil {
			t.Fatalf("case %d: apply: %v", i, err)
		}
		if !bytes.Equal(out, full) {
			t.Fatalf("case %d: rebuilt %q from %q, want %q", i, out, base, full)
		}
	}
}

// A request that grew by one message keeps only that message.
func TestDeltaOfAGrownRequestIsWhatIsNew(t *testing.T) {
	base := []byte(`{"messages":[{"role":"user","content":"go"}],"tools":[{"name":"list_files"}]}`)
	full := []byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"}],"tools":[{"name":"list_files"}]}`)
	d := Make("b", base, full)
	if string(d.Middle) != `,{"role":"assistant","content":"ok"}` {
		t.Fatalf("middle %q", d.Middle)
	}
}

// Bytes that are not a delta, or a delta that does not fit its base, are
// refused with ErrMalformed, never read past their end.
func TestMalformedDeltasAreRefused(t *testing.T) {
	good := Delta{Base: "sha256:b", Prefix: 2, Suffix: 1, Middle: []byte("xy")}.Encode()
	for name, data := range map[string][]byte{
		"empty":           nil,
		"other magic":     []byte("FLD\x02rest"),
		"no name length":  []byte("FLD\x01"),
		"name past end":   []byte("FLD\x01\x09ab"),
		"empty name":      []byte("FLD\x01\x00\x00\x00"),
		"no prefix":       good[:len(magic)+1+len("sha256:b")],
		"no suffix":       good[:len(magic)+1+len("sha256:b")+1],
		"overlong varint": append([]byte("FLD\x01\x01b"), bytes.Repeat([]byte{0xff}, 11)...),
	} {
		if _, err := Decode(data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	d, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range [][]byte{nil, []byte("ab"), []byte("ab")[:2:2]} {
		if _, err := d.Apply(base); !errors.Is(err, ErrMalformed) {
			t.Errorf("apply to %q: %v, want ErrMalformed", base, err)
		}
	}
	if out, err := d.Apply([]byte("abc")); err != nil || string(out) != "abxyc" {
		t.Fatalf("apply to abc: %q, %v", out, err)
	}
}

// FuzzDecodeApply: no input makes Decode or Apply panic or allocate more
// than the base and the input can back.
func FuzzDecodeApply(f *testing.F) {
	f.Add(Delta{Base: "b", Prefix: 1, Suffix: 1, Middle: []byte("m")}.Encode(), []byte("base"))
	f.Fuzz(func(t *testing.T, data, base []byte) {
		d, err := Decode(data)
		if err != nil {
			return
		}
		out, err := d.Apply(base)
		if err == nil && uint64(len(out)) != d.Size() {
			t.Fatalf("applied %d bytes, size says %d", len(out), d.Size())
		}
	})
}

// docs/operations.md gives a delta's bytes for readers in other languages:
// the magic, the base's digest as text with its length as an uvarint, the
// prefix and suffix as uvarints, then the middle. A change of layout must
// change that table too.
func TestTheStoredBytesAreTheDocumentedLayout(t *testing.T) {
	base := "sha256:" + strings.Repeat("ab", 32)
	d := Delta{Base: base, Prefix: 300, Suffix: 5, Middle: []byte("new")}
	want := []byte("FLD\x01")
	want = append(want, 71)
	want = append(want, base...)
	want = append(want, 0xac, 0x02) // 300: 0b10_0101100, low 7 bits first
	want = append(want, 5)
	want = append(want, "new"...)
	if got := d.Encode(); !bytes.Equal(got, want) {
		t.Fatalf("a delta encodes as\n% x\nwhere docs/operations.md gives\n% x", got, want)
	}
}
