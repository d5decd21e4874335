package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// EvidenceRef names a piece of evidence in a run: a fact ID, optionally
// followed by "/" and a call ID ("01J.../call-3"). Stop decisions check that
// every cited ref exists in the run and belongs to the current generation.
type EvidenceRef string

// RequirementID names one success requirement of a case.
type RequirementID string

// CallID correlates a model's tool call with its dispatch.
type CallID string

// InstrumentID names one grading instrument of a case.
type InstrumentID string

// Digest is a content identity: "sha256:" followed by 64 lowercase hex digits.
type Digest string

const digestPrefix = "sha256:"

// DigestOf returns the sha256 digest of b.
func DigestOf(b []byte) Digest {
	sum := sha256.Sum256(b)
	return Digest(digestPrefix + hex.EncodeToString(sum[:]))
}

// valid reports whether the digest is well formed, without allocating.
func (d Digest) valid() bool {
	s := string(d)
	if len(s) != len(digestPrefix)+64 || s[:len(digestPrefix)] != digestPrefix {
		return false
	}
	for i := len(digestPrefix); i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Validate checks the digest's syntax; path names the field in errors.
func (d Digest) Validate(path string) error {
	if d.valid() {
		return nil
	}
	s := string(d)
	if !strings.HasPrefix(s, digestPrefix) {
		return invalid(path, "digest %q must start with %q", s, digestPrefix)
	}
	h := s[len(digestPrefix):]
	if len(h) != 64 {
		return invalid(path, "digest %q must have 64 hex digits", s)
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return invalid(path, "digest %q must be lowercase hex", s)
		}
	}
	return nil
}

// Hex returns the digest without its algorithm prefix, usable as a subject
// token or an object name.
func (d Digest) Hex() string { return strings.TrimPrefix(string(d), digestPrefix) }
