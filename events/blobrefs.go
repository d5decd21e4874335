package events

import (
	"fmt"
	"reflect"
)

// BlobRef is one digest of a fact that names a blob the store must hold:
// a reader of the fact fetches it (a replay of a turn's request, the
// viewer, whatif, a regrade, a rerun of a case), and fails without it.
type BlobRef struct {
	// Field is where in the body the digest is, by its wire names, e.g.
	// "context_digest", "calls[1].args_digest", "cases[0].digest".
	Field string
	// Digest names the blob.
	Digest Digest
	// Holds says what the blob is, for a reader told it is missing, e.g.
	// "the turn's request" (BlobNeeds says what fails without it).
	Holds string
}

// NoCandidate is the snapshot a grade names when the run sealed no
// candidate: the digest of a fixed text, naming no blob.
var NoCandidate = DigestOf([]byte("factline:no-candidate"))

// What a blob ref holds (BlobRef.Holds).
const (
	HoldsRequest     = "a turn's request"
	HoldsSummary     = "a summary's request"
	HoldsReplyText   = "a reply's text"
	HoldsCallArgs    = "a call's arguments"
	HoldsCacheEntry  = "a response cache entry"
	HoldsContainment = "a runner's containment record"
	HoldsCase        = "a case"
	HoldsTreatment   = "a treatment"
	HoldsSpec        = "a suite's spec"
	HoldsSnapshot    = "a sealed workspace snapshot"
	HoldsFixture     = "a case's fixture"
	HoldsReport      = "a suite's report"
)

// BlobNeeds says what fails when a blob holding what (a Holds* constant)
// is missing from a store or an export.
func BlobNeeds(what string) string {
	switch what {
	case HoldsRequest:
		return "showing or replaying what the model was sent (view, whatif, a recorded replay)"
	case HoldsSummary:
		return "showing what the summariser was sent"
	case HoldsReplyText, HoldsCallArgs:
		return "reading what the model answered (view, replay, resuming the run)"
	case HoldsCacheEntry:
		return "a later hit on the entry (the response cache reads the reply from it)"
	case HoldsContainment:
		return "reading how the run was contained (Blobs.ClaimedContainment)"
	case HoldsCase, HoldsTreatment, HoldsSpec:
		return "running, resuming or regrading the suite's runs"
	case HoldsSnapshot, HoldsFixture:
		return "regrading the candidate and materialising its workspace"
	case HoldsReport:
		return "reading the suite's report"
	}
	return "reading the blob"
}

// BlobRefs lists the digests of f that name a blob the store must hold,
// in the order of the body's fields; the same digest may be named by two
// fields. Every other digest of a body names no blob (an identity, a
// digest of text the fact holds inline, an image's or an executable's
// digest): blobDigestFields (the guard test) lists each and why. A fact
// of a kind this version does not know, or without a body, names none.
//
// Each case was decided by reading the fact's writers: a field is a ref
// only when every writer stores the blob before it commits the fact.
func BlobRefs(f Fact) []BlobRef {
	var out []BlobRef
	add := func(field string, d Digest, holds string) {
		if d != "" {
			out = append(out, BlobRef{Field: field, Digest: d, Holds: holds})
		}
	}
	if f.Body == nil {
		return nil
	}
	body := any(f.Body)
	if v := reflect.ValueOf(body); v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		body = v.Elem().Interface()
	}
	switch b := body.(type) {
	case SuiteSubmitted:
		// suites.Publish stores the spec, each case and each treatment.
		add("spec_digest", b.SpecDigest, HoldsSpec)
		for i, c := range b.Cases {
			add(fmt.Sprintf("cases[%d].digest", i), c.Digest, HoldsCase)
		}
		for i, t := range b.Treatments {
			add(fmt.Sprintf("treatments[%d].digest", i), t.Digest, HoldsTreatment)
		}
	case RunRequested:
		// The meter names the submitted case and treatment blobs.
		requestRefs(b, "", add)
	case RunDelegated:
		// The runner stores the child's case (delegate.go) and names its
		// own treatment's blob.
		requestRefs(b.Request, "request.", add)
	case RunClaimed:
		// The runner stores the record before it names it
		// (containmentByDigest).
		add("containment_digest", b.ContainmentDigest, HoldsContainment)
	case TurnStarted:
		// The runner stores the request (Blobs.PutAfter) before the turn.
		add("context_digest", b.ContextDigest, HoldsRequest)
	case ContextSummarised:
		// condense.go stores the summary's request before the fact.
		add("request_digest", b.RequestDigest, HoldsSummary)
	case ModelReplied:
		// blobreply.go moves a large text or a call's large arguments to
		// blobs; otherwise the digests are of text the fact holds.
		if b.TextInBlob() {
			add("text_digest", b.TextDigest, HoldsReplyText)
		}
		for i, c := range b.Calls {
			if c.ArgsInBlob() {
				add(fmt.Sprintf("calls[%d].args_digest", i), c.ArgsDigest, HoldsCallArgs)
			}
		}
		if b.Cached != nil {
			// The entry a hit was read from (cache.go).
			add("cached.entry", b.Cached.Entry, HoldsCacheEntry)
		}
	case CandidateSealed:
		// Workspace.Seal stores the manifest and every file; the fixture
		// was stored when the suite was published (suites.PublishCase).
		add("snapshot_digest", b.SnapshotDigest, HoldsSnapshot)
		add("fixture_digest", b.FixtureDigest, HoldsFixture)
	case GradeInstrument:
		snapshotRef("snapshot_digest", b.SnapshotDigest, add)
	case GradeConflict:
		snapshotRef("snapshot_digest", b.SnapshotDigest, add)
	case GradeVerdict:
		snapshotRef("verdict.snapshot_id", b.Verdict.SnapshotID, add)
	case SuiteReported:
		// The meter stores the report before the fact (reportblob.go).
		add("report_digest", b.ReportDigest, HoldsReport)
	}
	return out
}

// requestRefs adds the case and treatment of a run's request.
func requestRefs(b RunRequested, prefix string, add func(string, Digest, string)) {
	add(prefix+"case_digest", b.CaseDigest, HoldsCase)
	add(prefix+"treatment_digest", b.TreatmentDigest, HoldsTreatment)
}

// snapshotRef adds a grade's snapshot: the sealed candidate it grades,
// unless the run sealed none (NoCandidate).
func snapshotRef(field string, d Digest, add func(string, Digest, string)) {
	if d != NoCandidate {
		add(field, d, HoldsSnapshot)
	}
}
