package secrets

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// FileExposure is who besides its owner may read or change a file that
// holds a secret (an nkey seed, a credentials file, a password, a private
// key), read from the file's mode and owner. It is the one rule for every
// such file factline reads: the store's own credential is refused when
// Loose, a file a flag names is warned about (docs/security.md).
type FileExposure struct {
	// Path is the file, as it was named.
	Path string
	// Mode is the file's permission bits.
	Mode fs.FileMode
	// Owner is the file's owner (uid), or -1 when the system does not say.
	Owner int
	// Self is this process's effective uid.
	Self int
}

// StatFile reads the exposure of the file at path (following a symbolic
// link, as reading it does).
func StatFile(path string) (FileExposure, error) {
	st, err := os.Stat(path)
	if err != nil {
		return FileExposure{}, err
	}
	e := FileExposure{Path: path, Mode: st.Mode().Perm(), Owner: -1, Self: os.Geteuid()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		e.Owner = int(sys.Uid)
	}
	return e, nil
}

// Loose reports whether anyone but the owner has any permission on the
// file (mode & 0077): the store's credential is refused then.
func (e FileExposure) Loose() bool { return e.Mode&0o077 != 0 }

// OthersRead reports whether the file's group or any user may read it.
func (e FileExposure) OthersRead() bool { return e.Mode&0o044 != 0 }

// GroupWrite reports whether the file's group may change it.
func (e FileExposure) GroupWrite() bool { return e.Mode&0o020 != 0 }

// WorldWrite reports whether any user may change it: anyone could put a
// secret of their own choosing in it.
func (e FileExposure) WorldWrite() bool { return e.Mode&0o002 != 0 }

// ForeignOwner reports whether the file belongs to a user other than this
// process's and root, who may change it or its mode at any time.
func (e FileExposure) ForeignOwner() bool { return e.Owner >= 0 && e.Owner != 0 && e.Owner != e.Self }

// Problems says, in a few words each, how the file is open to others;
// none for a file only its owner (this process's user or root) may use.
func (e FileExposure) Problems() []string {
	var out []string
	if e.OthersRead() {
		out = append(out, "other users may read it")
	}
	switch {
	case e.WorldWrite():
		out = append(out, "any user may change it")
	case e.GroupWrite():
		out = append(out, "its group may change it")
	}
	if e.ForeignOwner() {
		out = append(out, fmt.Sprintf("it belongs to uid %d, not to this process's uid %d", e.Owner, e.Self))
	}
	return out
}

// Fix is the command that closes the file to others: a chmod, and a
// chown first when another user owns it.
func (e FileExposure) Fix() string {
	fix := "chmod 600 " + shellQuote(e.Path)
	if e.ForeignOwner() {
		fix = fmt.Sprintf("chown %d %s && %s", e.Self, shellQuote(e.Path), fix)
	}
	return fix
}

// ModeString is the permission bits as chmod takes them (0644).
func (e FileExposure) ModeString() string { return fmt.Sprintf("%04o", uint32(e.Mode)) }

// shellQuote quotes s for a shell when it needs it, so that a fix can be
// pasted as it is.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
