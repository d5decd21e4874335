package bus

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// scopeMsgID is the deduplication ID a fact is stored under (its
// Nats-Msg-Id header): 128 bits of the SHA-256 of "<suite>/<id>", in
// base64url, 22 characters.
//
// JetStream deduplicates message IDs across the whole stream, while the IDs
// writers derive (a run's "<run>/run.requested", a decision's
// "<run>/stop.decided/<turn>") are unique only within a suite, and run IDs
// repeat across suites that share a case and a treatment: unscoped, a
// second suite's facts would be taken for retries of the first's and
// dropped. The scoped ID itself was stored until issue 38: with a ULID
// suite and a run named after its case it was some 80 bytes of every
// fact. The hash keeps it distinct (two IDs share it only by a SHA-256
// collision within 128 bits) at a fixed length; what readers lose is the
// writer's ID in the clear, which they only ever compare against
// (Record.HasMsgID).
func scopeMsgID(suite, id string) string {
	sum := sha256.Sum256([]byte(suite + "/" + id))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// unscopeMsgID returns a stored fact's ID as Record.MsgID holds it: a
// hashed ID as it is, an ID scoped in the clear (stores written before IDs
// were hashed) without its suite, and an ID stored before IDs were scoped
// as it is.
func unscopeMsgID(suite, stored string) string {
	if id, ok := strings.CutPrefix(stored, suite+"/"); ok {
		return id
	}
	return stored
}

// HasMsgID reports whether r was stored under the writer's ID id, in any
// form a store holds: hashed, or (older stores) the ID itself.
func (r Record) HasMsgID(id string) bool {
	return r.MsgID == id || r.MsgID == scopeMsgID(r.Fact.Suite, id)
}
