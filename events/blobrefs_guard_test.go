package events

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// blobRefFields are the digest fields BlobRefs returns (when their
// condition holds), by kind and wire path ("[]" for any index).
var blobRefFields = map[string]bool{
	"suite.submitted:spec_digest":            true,
	"suite.submitted:cases[].digest":         true,
	"suite.submitted:treatments[].digest":    true,
	"run.requested:case_digest":              true,
	"run.requested:treatment_digest":         true,
	"run.delegated:request.case_digest":      true,
	"run.delegated:request.treatment_digest": true,
	"run.claimed:containment_digest":         true,
	"turn.started:context_digest":            true,
	"context.summarised:request_digest":      true,
	"model.replied:text_digest":              true, // only when TextInBlob
	"model.replied:calls[].args_digest":      true, // only when ArgsInBlob
	"model.replied:cached.entry":             true,
	"candidate.sealed:snapshot_digest":       true,
	"candidate.sealed:fixture_digest":        true,
	"grade.instrument:snapshot_digest":       true, // not NoCandidate
	"grade.conflict:snapshot_digest":         true, // not NoCandidate
	"grade.verdict:verdict.snapshot_id":      true, // not NoCandidate
	"suite.reported:report_digest":           true,
}

// noBlobFields are the digest fields that name no blob the store must
// hold, each with the reason, found by reading its writers.
var noBlobFields = map[string]string{
	"run.requested:identity":         "the agent identity: a digest of the run's components, never stored",
	"run.delegated:request.identity": "the agent identity, as in run.requested",
	"run.claimed:identity":           "the agent identity the runner computed: never stored",
	"run.claimed:extensions[].executable": "the sha256 of an extension's executable file on the runner's host, " +
		"an identity: the file is never put in the store",
	"run.claimed:containment.image.digest": "a container image's digest, held by the container engine, not the store",
	"grade.instrument:containment.image.digest": "a container image's digest, held by the container engine, " +
		"not the store",
	"control.accepted:args_digest": "binds an approval to the exact arguments it approves: an identity; " +
		"when the arguments were moved to a blob, the model.replied call names it",
	"dispatch.intended:args_digest": "the digest of the call's arguments, compared on recovery; " +
		"the arguments are the model.replied call's, inline or in the blob it names",
	"dispatch.completed:dispatch.digest": "the workspace's state after the dispatch, compared by the staller " +
		"and the decider as an identity; no reader fetches it from the store",
	"turn.completed:evidence.dispatches[].digest": "the workspace's state after a dispatch, as in dispatch.completed",
	"dispatch.completed:output_digest": "reserved: never written by this version (the output is always inline); " +
		"the staller compares it as an identity and the viewer does not show it. A writer that moves " +
		"outputs to blobs must list it in BlobRefs (and link it in the viewer again)",
	"model.replied:reply_digest": "never written by this version, and read by no one",
	"model.replied:cache_identity": "the response cache's model identity: a key, never stored; " +
		"the cache entry blob is cached.entry",
}

// unionVariants gives the guard walk the variants of a union.
func (union[S]) unionVariants() map[string]func() variant {
	var s S
	return s.variants()
}

type withVariants interface {
	unionVariants() map[string]func() variant
}

// digestFields returns the wire paths of every Digest field a value of
// type ty can hold, including in each variant of its unions.
func digestFields(path string, ty reflect.Type, seen map[reflect.Type]bool) []string {
	if ty == reflect.TypeFor[Digest]() {
		return []string{path}
	}
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch ty.Kind() {
	case reflect.Pointer:
		return digestFields(path, ty.Elem(), seen)
	case reflect.Slice, reflect.Array:
		return digestFields(path+"[]", ty.Elem(), seen)
	case reflect.Map:
		return append(digestFields(path+"{key}", ty.Key(), seen), digestFields(path+"{}", ty.Elem(), seen)...)
	case reflect.Struct:
		if seen[ty] {
			return nil
		}
		seen[ty] = true
		defer delete(seen, ty)
		var out []string
		if u, ok := reflect.Zero(ty).Interface().(withVariants); ok {
			names := slices.Sorted(maps.Keys(u.unionVariants()))
			for _, name := range names {
				vt := reflect.TypeOf(u.unionVariants()[name]())
				out = append(out, digestFields(path+"<"+name+">", vt, seen)...)
			}
			return out
		}
		for i := range ty.NumField() {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				if f.Anonymous {
					out = append(out, digestFields(path, f.Type, seen)...)
					continue
				}
				name = f.Name
			}
			out = append(out, digestFields(join(name), f.Type, seen)...)
		}
		return out
	}
	return nil
}

// TestBlobRefsGuard fails when a body holds a digest field that is
// neither a blob ref nor listed as naming no blob: a new field forces a
// decision, made by reading its writers.
func TestBlobRefsGuard(t *testing.T) {
	found := map[string]bool{}
	for _, k := range Kinds() {
		for _, p := range digestFields("", reflect.TypeOf(kinds[k].new()), map[reflect.Type]bool{}) {
			key := string(k) + ":" + p
			found[key] = true
			_, none := noBlobFields[key]
			switch {
			case blobRefFields[key] && none:
				t.Errorf("%s is listed both as a blob ref and as naming no blob", key)
			case !blobRefFields[key] && !none:
				t.Errorf("digest field %s is neither a blob ref (BlobRefs, blobRefFields) nor listed in noBlobFields with the reason: read its writers and decide", key)
			}
		}
	}
	for key := range blobRefFields {
		if !found[key] {
			t.Errorf("blobRefFields lists %s, which no body holds", key)
		}
	}
	for key := range noBlobFields {
		if !found[key] {
			t.Errorf("noBlobFields lists %s, which no body holds", key)
		}
	}
}

// fillDigests sets every Digest field v holds to a digest of its path,
// giving each slice one element and each pointer a value; strings stay
// empty, so that a text or arguments moved to a blob is what it says.
func fillDigests(path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() == reflect.TypeFor[Digest]() {
			v.SetString(string(DigestOf([]byte(path))))
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillDigests(path, v.Elem())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillDigests(path+"[]", v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillDigests(path+"."+f.Name, v.Field(i))
			}
		}
	}
}

var anyIndex = regexp.MustCompile(`\[\d+\]`)

// TestBlobRefsReturnsListed checks that BlobRefs returns exactly the
// fields blobRefFields lists for each kind, on a body whose every digest
// is set and whose texts and arguments are in blobs; and none of them on
// a grade of no candidate.
func TestBlobRefsReturnsListed(t *testing.T) {
	for _, k := range Kinds() {
		p := reflect.ValueOf(kinds[k].new())
		fillDigests(string(k), p)
		body := p.Elem().Interface().(Body)
		var got []string
		for _, r := range BlobRefs(Fact{Body: body}) {
			if r.Digest == "" || r.Holds == "" {
				t.Errorf("%s: ref %+v has no digest or no description", k, r)
			}
			got = append(got, string(k)+":"+anyIndex.ReplaceAllString(r.Field, "[]"))
		}
		var want []string
		for key := range blobRefFields {
			if strings.HasPrefix(key, string(k)+":") {
				want = append(want, key)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("BlobRefs of a full %s body: got %v, want %v", k, got, want)
		}
		// A pointer body names the same blobs.
		if n := len(BlobRefs(Fact{Body: p.Interface().(Body)})); n != len(got) {
			t.Errorf("BlobRefs of a *%s body: %d refs, want %d", k, n, len(got))
		}
	}
	for _, body := range []Body{GradeVerdict{Verdict: GraderVerdict{SnapshotID: NoCandidate}},
		GradeInstrument{SnapshotDigest: NoCandidate}, GradeConflict{SnapshotDigest: NoCandidate}} {
		if refs := BlobRefs(Fact{Body: body}); len(refs) != 0 {
			t.Errorf("%s of no candidate names blobs %v", body.Kind(), refs)
		}
	}
}

// TestBlobRefsInline checks that a reply whose text and arguments are
// inline names no blob for them, nor a call without arguments.
func TestBlobRefsInline(t *testing.T) {
	args := `{"path":"a.go"}`
	b := ModelReplied{Turn: 1, Provider: "p", Text: "hi", TextDigest: DigestOf([]byte("hi")),
		Calls: []ToolCall{{ID: "c1", Name: "read", Args: args, ArgsDigest: DigestOf([]byte(args))},
			{ID: "c2", Name: "list", ArgsDigest: DigestOf(nil)},
			{ID: "c3", Name: "edit", ArgsDigest: DigestOf([]byte("moved"))}}}
	got := BlobRefs(Fact{Body: b})
	want := []BlobRef{{Field: "calls[2].args_digest", Digest: DigestOf([]byte("moved")), Holds: HoldsCallArgs}}
	if !slices.Equal(got, want) {
		t.Fatalf("BlobRefs = %+v, want %+v", got, want)
	}
}
