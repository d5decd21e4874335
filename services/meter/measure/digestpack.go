package measure

import (
	"encoding/hex"

	"github.com/factline/factline/events"
)

// digestPrefix is the form of every digest the store names: sha256 in
// lower-case hex.
const digestPrefix = "sha256:"

// packDigest returns the 32 bytes a digest names, when it is in the form
// unpackDigest gives back byte for byte ("sha256:" and 64 lower-case hex
// digits): 32 bytes held where its string holds 71 and a header.
func packDigest(d events.Digest) ([32]byte, bool) {
	var out [32]byte
	s := string(d)
	if len(s) != len(digestPrefix)+64 || s[:len(digestPrefix)] != digestPrefix {
		return out, false
	}
	for i := len(digestPrefix); i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return out, false
		}
	}
	if _, err := hex.Decode(out[:], []byte(s[len(digestPrefix):])); err != nil {
		return out, false
	}
	return out, true
}

// unpackDigest is the digest packDigest packed.
func unpackDigest(b [32]byte) events.Digest {
	return events.Digest(digestPrefix + hex.EncodeToString(b[:]))
}
