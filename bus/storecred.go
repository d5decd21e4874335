package bus

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nkeys"

	"github.com/factline/factline/secrets"
)

// StoreCredentialFile holds the nkey seed of the one NATS user a store's
// embedded server admits (see docs/security.md#a-store-served-to-other-processes).
// It is made the first time a process opens the store (mode 0600) and
// kept, so clients that copied it keep working across restarts.
const StoreCredentialFile = "nats-client.nk"

// storeCredential returns the store's credential file and its seed. With
// create, a store without one gets a new one (made reports that).
func storeCredential(dir string, create bool) (path string, seed []byte, made bool, err error) {
	path = filepath.Join(dir, StoreCredentialFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	seed, err = readCredential(path)
	switch {
	case err == nil:
		return path, seed, false, nil
	case !errors.Is(err, fs.ErrNotExist) || !create:
		return path, nil, false, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return path, nil, false, fmt.Errorf("make the store's credential: %w", err)
	}
	if seed, err = kp.Seed(); err != nil {
		return path, nil, false, fmt.Errorf("make the store's credential: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return path, nil, false, fmt.Errorf("store dir: %w", err)
	}
	// O_EXCL: a credential another process just made is never replaced.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return path, nil, false, fmt.Errorf("write the store's credential: %w", err)
	}
	_, werr := f.Write(append(seed, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return path, nil, false, fmt.Errorf("write the store's credential %s: %w", path, werr)
	}
	return path, seed, true, nil
}

// credentialFileError is a store's credential file that no retry can
// use until someone fixes it: other users may read it, or it holds no
// seed. An attaching open reports it at once instead of waiting for the
// holder (OpenEmbedded).
type credentialFileError struct{ err error }

func (e *credentialFileError) Error() string { return e.err.Error() }
func (e *credentialFileError) Unwrap() error { return e.err }

// readCredential reads a store's credential file, refusing one other
// users may read: whoever reads it owns the store.
func readCredential(path string) ([]byte, error) {
	exp, err := secrets.StatFile(path)
	if err != nil {
		return nil, err
	}
	// The same rule as for every file holding a secret, stricter: a flag's
	// file open to others is warned about (a deployment may have no other
	// way to hand it to a container's user), the store's own is refused.
	if exp.Loose() {
		return nil, &credentialFileError{fmt.Errorf("the store's credential %s may be read by other users (mode %s): run 'chmod 600 %s'", path, exp.ModeString(), path)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	seed := bytes.TrimSpace(data)
	if _, err := ClientAuth(seed); err != nil {
		return nil, &credentialFileError{fmt.Errorf("the store's credential %s: %w", path, err)}
	}
	return seed, nil
}

// localURL is the URL processes on this machine reach a listener at: an
// unspecified address (0.0.0.0, ::) is reached through loopback.
func localURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "nats://" + addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}
