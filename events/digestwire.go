package events

import (
	"encoding/hex"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// On the wire a well-formed digest is a msgpack bin of 33 bytes: an
// algorithm code, then the raw sum. The string form ("sha256:" and 64 hex
// digits, 71 bytes) is what envelope version 1 wrote, and what readers
// still accept; in memory a Digest stays that string, so no caller sees the
// difference.
const (
	// digestAlgSHA256 is the algorithm code of sha256.
	digestAlgSHA256 = 0x01
	// digestWireLen is the length of a binary digest: the code and 32 bytes.
	digestWireLen = 1 + 32
)

// EncodeMsgpack implements msgpack.CustomEncoder. A digest that is not well
// formed (only a fact that fails validation carries one) keeps its string
// form, so that encoding never hides what validation will refuse.
func (d Digest) EncodeMsgpack(enc *msgpack.Encoder) error {
	if !d.valid() {
		return enc.EncodeString(string(d))
	}
	var b [digestWireLen]byte
	b[0] = digestAlgSHA256
	if _, err := hex.Decode(b[1:], []byte(d[len(digestPrefix):])); err != nil {
		return fmt.Errorf("digest %q: %w", string(d), err)
	}
	return enc.EncodeBytes(b[:])
}

// DecodeMsgpack implements msgpack.CustomDecoder: a binary digest (written
// since envelope version 2) or a string (version 1, or a malformed digest
// that validation then names).
func (d *Digest) DecodeMsgpack(dec *msgpack.Decoder) error {
	code, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if !isBinCode(code) {
		var s string
		if err := dec.Decode(&s); err != nil {
			return err
		}
		*d = Digest(s)
		return nil
	}
	b, err := dec.DecodeBytes()
	if err != nil {
		return err
	}
	s, err := digestFromWire(b)
	if err != nil {
		return err
	}
	*d = s
	return nil
}

// digestFromWire turns a binary digest into its string form.
func digestFromWire(b []byte) (Digest, error) {
	if len(b) != digestWireLen {
		return "", fmt.Errorf("binary digest of %d bytes, want %d (an algorithm code and 32 bytes)", len(b), digestWireLen)
	}
	if b[0] != digestAlgSHA256 {
		return "", fmt.Errorf("binary digest with unknown algorithm code %#x (0x01 is sha256)", b[0])
	}
	return Digest(digestPrefix + hex.EncodeToString(b[1:])), nil
}

// isBinCode reports whether a msgpack type byte starts a bin value.
func isBinCode(c byte) bool { return c == 0xc4 || c == 0xc5 || c == 0xc6 }
