package workspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/workspace"
)

var (
	dA = events.DigestOf([]byte("a"))
	dB = events.DigestOf([]byte("bb"))
)

func sampleEntries() []workspace.Entry {
	return []workspace.Entry{
		{Path: "z/link", Kind: workspace.KindSymlink, Size: 11, Target: "../a b%\n.tx"},
		{Path: "bin/run", Kind: workspace.KindExec, Size: 2, Digest: dB},
		{Path: "a b%\n.txt", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "a.txt", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "a/x", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "out", Kind: workspace.KindDir},
		{Path: "ünï", Kind: workspace.KindFile, Size: 2, Digest: dB},
	}
}

func TestManifestEncodingIsCanonical(t *testing.T) {
	m, err := workspace.NewManifest(sampleEntries())
	if err != nil {
		t.Fatal(err)
	}
	want := "factline-manifest v1\n" +
		"a%20b%25%0A.txt file 1 " + string(dA) + "\n" +
		"a.txt file 1 " + string(dA) + "\n" + // '.' (0x2E) sorts before '/' (0x2F)
		"a/x file 1 " + string(dA) + "\n" +
		"bin/run exec 2 " + string(dB) + "\n" +
		"out dir 0 -\n" +
		"z/link symlink 11 ../a%20b%25%0A.tx\n" +
		"ünï file 2 " + string(dB) + "\n"
	if got := string(m.Encode()); got != want {
		t.Fatalf("encoding:\n%s\nwant:\n%s", got, want)
	}
	if m.Digest() != events.DigestOf([]byte(want)) {
		t.Errorf("digest %s is not the digest of the encoding", m.Digest())
	}
	back, err := workspace.DecodeManifest([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != m.Digest() || len(workspace.Diff(m, back)) != 0 {
		t.Errorf("decode(encode(m)) differs: %v", workspace.Diff(m, back))
	}
	for i, e := range back.Entries() {
		if e != m.Entries()[i] {
			t.Errorf("entry %d: %+v, want %+v", i, e, m.Entries()[i])
		}
	}
	// Entries in any order give the same manifest.
	es := sampleEntries()
	es[0], es[len(es)-1] = es[len(es)-1], es[0]
	m2, err := workspace.NewManifest(es)
	if err != nil || m2.Digest() != m.Digest() {
		t.Errorf("order of construction changed the digest: %v", err)
	}
	if e, ok := m.Lookup("bin/run"); !ok || e.Digest != dB {
		t.Errorf("Lookup(bin/run) = %+v, %v", e, ok)
	}
	if _, ok := m.Lookup("bin"); ok {
		t.Errorf("Lookup(bin) found an entry for an implied directory")
	}
	if m.Bytes() != 1+1+1+2+2 {
		t.Errorf("Bytes = %d, want 7 (files only)", m.Bytes())
	}
	var empty workspace.Manifest
	if empty.Digest() != events.DigestOf([]byte("factline-manifest v1\n")) {
		t.Errorf("the empty tree's digest is %s", empty.Digest())
	}
}

func TestDecodeManifestRefusesNonCanonical(t *testing.T) {
	h := "factline-manifest v1\n"
	f := func(path string) string { return path + " file 1 " + string(dA) + "\n" }
	for name, body := range map[string]string{
		"no header":            f("a"),
		"other version":        "factline-manifest v2\n" + f("a"),
		"no final newline":     h + strings.TrimSuffix(f("a"), "\n"),
		"unsorted":             h + f("b") + f("a"),
		"duplicate":            h + f("a") + f("a"),
		"lowercase escape":     h + f("a%0a"),
		"needless escape":      h + f("a%41"),
		"raw control byte":     h + f("a\tb"),
		"truncated escape":     h + f("a%2"),
		"leading zero size":    h + "a file 01 " + string(dA) + "\n",
		"negative size":        h + "a file -1 " + string(dA) + "\n",
		"plus size":            h + "a file +1 " + string(dA) + "\n",
		"uppercase digest":     h + "a file 1 " + strings.ToUpper(string(dA)) + "\n",
		"short digest":         h + "a file 1 sha256:abc\n",
		"unknown kind":         h + "a fifo 0 -\n",
		"dir with size":        h + "a dir 1 -\n",
		"dir with digest":      h + "a dir 0 " + string(dA) + "\n",
		"symlink size":         h + "a symlink 3 abcd\n",
		"empty target":         h + "a symlink 0 \n",
		"extra field":          h + "a file 1 " + string(dA) + " x\n",
		"missing field":        h + "a file 1\n",
		"blank line":           h + "\n",
		"entry under a file":   h + f("a") + f("a/b"),
		"entry under a dir":    h + "a dir 0 -\n" + f("a/b"),
		"trailing slash":       h + f("a/"),
		"double slash":         h + f("a//b"),
		"dot component":        h + f("a/./b"),
		"dot dot component":    h + f("a/../b"),
		"absolute":             h + f("/a"),
		"NUL in path":          h + f("a%00b"),
		"NUL in target":        h + "a symlink 3 a%00b\n",
		"trailing garbage":     h + f("a") + "garbage",
		"windows line endings": h + "a file 1 " + string(dA) + "\r\n",
	} {
		if m, err := workspace.DecodeManifest([]byte(body)); !errors.Is(err, workspace.ErrBadManifest) {
			t.Errorf("%s: decoded %v, err %v; want ErrBadManifest", name, m.Entries(), err)
		}
	}
}

func TestNewManifestRefusesInvalidEntries(t *testing.T) {
	for name, es := range map[string][]workspace.Entry{
		"duplicate":        {{Path: "a", Kind: workspace.KindDir}, {Path: "a", Kind: workspace.KindDir}},
		"escaping":         {{Path: "../a", Kind: workspace.KindDir}},
		"below a symlink":  {{Path: "l", Kind: workspace.KindSymlink, Size: 1, Target: "x"}, {Path: "l/f", Kind: workspace.KindFile, Size: 1, Digest: dA}},
		"file no digest":   {{Path: "f", Kind: workspace.KindFile, Size: 1}},
		"file with target": {{Path: "f", Kind: workspace.KindFile, Size: 1, Digest: dA, Target: "x"}},
		"symlink digest":   {{Path: "l", Kind: workspace.KindSymlink, Size: 1, Target: "x", Digest: dA}},
		"no kind":          {{Path: "f"}},
		"negative size":    {{Path: "f", Kind: workspace.KindFile, Size: -1, Digest: dA}},
	} {
		if _, err := workspace.NewManifest(es); !errors.Is(err, workspace.ErrBadManifest) {
			t.Errorf("%s: err %v, want ErrBadManifest", name, err)
		}
	}
}

func TestDiff(t *testing.T) {
	a, err := workspace.NewManifest([]workspace.Entry{
		{Path: "keep", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "edit", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "gone", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "mode", Kind: workspace.KindFile, Size: 2, Digest: dB},
		{Path: "relink", Kind: workspace.KindSymlink, Size: 1, Target: "x"},
		{Path: "became/dir", Kind: workspace.KindFile, Size: 1, Digest: dA},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := workspace.NewManifest([]workspace.Entry{
		{Path: "keep", Kind: workspace.KindFile, Size: 1, Digest: dA},
		{Path: "edit", Kind: workspace.KindFile, Size: 2, Digest: dB},
		{Path: "mode", Kind: workspace.KindExec, Size: 2, Digest: dB},
		{Path: "relink", Kind: workspace.KindSymlink, Size: 1, Target: "y"},
		{Path: "became", Kind: workspace.KindDir},
		{Path: "new/file", Kind: workspace.KindFile, Size: 1, Digest: dA},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := workspace.Diff(a, b)
	if s, want := paths(got), "added became, removed became/dir, modified edit, removed gone, modified mode, added new/file, modified relink"; s != want {
		t.Fatalf("Diff = %q\nwant   %q", s, want)
	}
	for _, c := range got {
		switch c.Kind {
		case workspace.Added:
			if c.Old != (workspace.Entry{}) || c.New.Path != c.Path {
				t.Errorf("added %+v", c)
			}
		case workspace.Removed:
			if c.New != (workspace.Entry{}) || c.Old.Path != c.Path {
				t.Errorf("removed %+v", c)
			}
		case workspace.Modified:
			if c.Old.Path != c.Path || c.New.Path != c.Path || c.Old == c.New {
				t.Errorf("modified %+v", c)
			}
		}
	}
	if back := workspace.Diff(b, a); paths(back) != "removed became, added became/dir, modified edit, added gone, modified mode, removed new/file, modified relink" {
		t.Errorf("Diff(b, a) = %q", paths(back))
	}
	if d := workspace.Diff(a, a); len(d) != 0 {
		t.Errorf("Diff(a, a) = %v", d)
	}
	if d := workspace.Diff(workspace.Manifest{}, a); len(d) != a.Len() {
		t.Errorf("Diff(empty, a) has %d changes, want %d", len(d), a.Len())
	}
}

// FuzzDecodeManifest checks canonicality: whatever decodes re-encodes to the
// same bytes, so one tree has exactly one encoding and one digest.
func FuzzDecodeManifest(f *testing.F) {
	m, err := workspace.NewManifest(sampleEntries())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m.Encode())
	f.Add([]byte("factline-manifest v1\n"))
	f.Add([]byte("factline-manifest v1\na%20b dir 0 -\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := workspace.DecodeManifest(b)
		if err != nil {
			if !errors.Is(err, workspace.ErrBadManifest) {
				t.Fatalf("error %v is not ErrBadManifest", err)
			}
			return
		}
		if got := m.Encode(); string(got) != string(b) {
			t.Fatalf("decoded and re-encoded:\n%q\nfrom\n%q", got, b)
		}
		if m.Digest() != events.DigestOf(b) {
			t.Fatalf("digest %s is not the digest of the bytes", m.Digest())
		}
		again, err := workspace.NewManifest(m.Entries())
		if err != nil || again.Digest() != m.Digest() {
			t.Fatalf("entries of a decoded manifest rebuild as %v, %v", again.Digest(), err)
		}
	})
}
