package audit

import (
	"fmt"

	"github.com/factline/factline/events"
)

// RuleBlobHeld: every blob a fact names (events.BlobRefs: a request, a
// case, a snapshot, a cache entry, ...) is held by the store, and, when it
// is stored as a delta, so is every base it is rebuilt on
// (Options.MissingBase). Checked only when Options.Blobs says what the
// store holds.
const RuleBlobHeld = "blob-held"

// checkBlobs reports each blob ref of facts whose blob held says the
// store (where, when not empty) does not hold, or whose delta's base
// missingBase (when not nil) names as not held, in log order. seqs, when
// as long as facts, gives each fact's stream sequence; otherwise a fact is
// named by its position.
func checkBlobs(facts []events.Fact, seqs []uint64, held func(events.Digest) bool, missingBase func(events.Digest) events.Digest, where string) []Violation {
	if held == nil {
		return nil
	}
	if where == "" {
		where = "the store"
	}
	var out []Violation
	for i, f := range facts {
		for _, ref := range events.BlobRefs(f) {
			lacks := "which " + where + " does not hold"
			if held(ref.Digest) {
				var base events.Digest
				if missingBase != nil {
					base = missingBase(ref.Digest)
				}
				if base == "" {
					continue
				}
				lacks = fmt.Sprintf("which %s holds as a delta of blob %s, which %s does not hold, so it cannot be rebuilt", where, base, where)
			}
			at := fmt.Sprintf("the fact at position %d", f.Position)
			if len(seqs) == len(facts) {
				at = fmt.Sprintf("message %d", seqs[i])
			}
			out = append(out, Violation{f.Suite, f.Run, RuleBlobHeld, fmt.Sprintf(
				"%s (%s) field %s names blob %s, %s, %s: %s fails without it",
				at, f.Kind(), ref.Field, ref.Digest, ref.Holds, lacks, events.BlobNeeds(ref.Holds))})
		}
	}
	return out
}
