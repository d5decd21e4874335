package extensions

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/factline/factline/events"
)

// Rejection codes: why an extension was refused before its process started.
const (
	// RejectNotAllowlisted: the runner's allowlist has no entry of that name.
	RejectNotAllowlisted = "not_allowlisted"
	// RejectUnreadable: the pinned executable cannot be read (missing, not a
	// regular file, no permission).
	RejectUnreadable = "executable_unreadable"
	// RejectDigestMismatch: the executable's digest is not the pinned one.
	RejectDigestMismatch = "digest_mismatch"
)

// ReasonRejected prefixes the run.ended reason of a run whose extension was
// refused: "extension_rejected: <name>: <code>: <detail>".
const ReasonRejected = "extension_rejected"

// Rejection is an extension refused before its process started.
type Rejection struct {
	Extension string
	Code      string
	Detail    string
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("%s: %s: %s: %s", ReasonRejected, r.Extension, r.Code, r.Detail)
}

// ErrRejected matches every *Rejection with errors.Is.
var ErrRejected = errors.New("extension rejected")

// Is makes errors.Is(err, ErrRejected) true.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// Admit returns the allowlist entries of the named extensions, in the order
// named, after checking each executable against its pinned digest. The
// first name that is not allowlisted, or whose executable is not the pinned
// one, is refused with a *Rejection; nothing has been started then.
func Admit(l *Allowlist, names []string) ([]Entry, error) {
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		e, ok := l.Lookup(n)
		if !ok {
			return nil, &Rejection{Extension: n, Code: RejectNotAllowlisted, Detail: "the runner's extension allowlist has no entry of this name"}
		}
		if err := Verify(e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Verify checks that the entry's executable is the file the allowlist pins.
func Verify(e Entry) error {
	got, err := FileDigest(e.Command)
	if err != nil {
		return &Rejection{Extension: e.Name, Code: RejectUnreadable, Detail: err.Error()}
	}
	if got != e.Digest {
		return &Rejection{Extension: e.Name, Code: RejectDigestMismatch,
			Detail: fmt.Sprintf("%s is %s, the allowlist pins %s", e.Command, got, e.Digest)}
	}
	return nil
}

// FileDigest returns the sha256 digest of a regular file.
func FileDigest(path string) (events.Digest, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return events.Digest("sha256:" + hex.EncodeToString(h.Sum(nil))), nil
}
