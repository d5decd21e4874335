package bus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/factline/factline/internal/urlsecret"
)

// StoreLockFile is the file of a store directory that the one process
// running the store's embedded server holds an exclusive flock(2) on, for
// as long as it runs, beside one on the directory itself. The kernel
// releases the locks when that process ends, however it ends (a SIGKILL
// included), so a lock is never stale; the file itself stays (removing it
// would let two processes lock two different files of one name, which the
// directory's lock still catches). It also holds the holder's PID and
// command line, for people (see docs/operations.md#one-store-one-server).
// A process that holds only the file (flock(1) for a backup, a factline
// from before the directory was locked too) holds the store as well.
const StoreLockFile = "factline.lock"

// storeLock is this process's lock on a store directory: the directory
// itself (nil where its filesystem cannot flock a directory) and its
// lock file.
type storeLock struct{ d, f *os.File }

// lockStore takes the store's lock without waiting. It returns nil (and
// no error) when another process holds it.
//
// The directory is locked first. Its lock is what no path can undo: the
// lock file removed or replaced while its holder runs (a cleanup script,
// an rsync of the directory) leaves the holder locking a file no name
// reaches, and a newcomer would lock the new file and start a second
// server on the store. The directory cannot be swapped for another
// under the store's files. The file is locked too, for flock(1) and for
// older factlines, which lock the file alone.
func lockStore(dir string) (*storeLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store dir: %w", err)
	}
	// O_CLOEXEC (Go's default) keeps the locks out of the commands the
	// runner starts: they die with this process, not with a stray child.
	d, err := os.Open(dir)
	if err == nil {
		if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			d.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil
			}
			d = nil
		}
	} else {
		d = nil
	}
	// d is nil where the directory cannot be opened to read (a mode
	// without r) or its filesystem cannot flock a directory (some
	// network filesystems): the lock file alone holds the store then, as
	// before the directory was locked.
	path := filepath.Join(dir, StoreLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		closeIf(d)
		return nil, fmt.Errorf("store %s: open its lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		closeIf(d)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("store %s: lock %s: %w", dir, path, err)
	}
	if err := writeNote(f); err != nil {
		f.Close()
		closeIf(d)
		return nil, fmt.Errorf("store %s: write its lock %s: %w", dir, path, err)
	}
	return &storeLock{d: d, f: f}, nil
}

// writeNote writes the holder's PID and command line into its lock file.
func writeNote(f *os.File) error {
	// The note outlives this process and is quoted by others: a secret
	// the command line carries (a URL's password, --password) is masked.
	note := fmt.Sprintf("pid %d\ncommand %s\n", os.Getpid(), strings.Join(urlsecret.Args(os.Args), " "))
	err := f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(note), 0)
	}
	return err
}

// relock locks the file at the lock file's path again when it is no
// longer the one this process locked (removed or replaced while it
// holds the store), so that a process that holds the store with flock(1)
// on the path, as a backup does, still waits for this one. changed says
// it locked a new file; an error says the file at the path could not be
// locked (another process locked it first).
func (l *storeLock) relock(dir string) (changed bool, err error) {
	path := filepath.Join(dir, StoreLockFile)
	held, err := l.f.Stat()
	if err != nil {
		return false, fmt.Errorf("the lock file this process holds: %w", err)
	}
	if now, err := os.Stat(path); err == nil && os.SameFile(now, held) {
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("open %s again: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false, fmt.Errorf("lock %s again: %w", path, err)
	}
	if err := writeNote(f); err != nil {
		f.Close()
		return false, fmt.Errorf("write %s again: %w", path, err)
	}
	// The file no path names any more is let go: the directory's lock,
	// and now this file's, hold the store.
	old := l.f
	l.f = f
	_ = old.Close()
	return true, nil
}

func closeIf(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}

// release gives the lock up: closing the only descriptors of the locked
// file and directory releases them, the file's first (a newcomer takes
// the directory's, then the file's).
func (l *storeLock) release() {
	_ = l.f.Close()
	closeIf(l.d)
}

// holder is the process holding a store, as far as it can be told.
type holder struct {
	pid     int    // 0: unknown
	command string // its command line, as it wrote it into the lock file
}

func (h holder) String() string {
	switch {
	case h.pid == 0:
		return "another process"
	case h.command != "":
		return fmt.Sprintf("process %d (%s)", h.pid, h.command)
	}
	return fmt.Sprintf("process %d", h.pid)
}

// storeHolder names the process holding the store's lock: the kernel's
// word (/proc/locks) first, the directory's lock before the file's, since
// the file's note may be a dead holder's that the new one has not yet
// replaced, may have been written by nobody (flock(1) holding the store
// for a backup), or may be gone or replaced while its holder runs.
func storeHolder(dir string) holder {
	path := filepath.Join(dir, StoreLockFile)
	var h holder
	if data, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "pid "); ok {
				h.pid, _ = strconv.Atoi(v)
			} else if v, ok := strings.CutPrefix(line, "command "); ok {
				h.command = v
			}
		}
	}
	pid := flockOwner(dir)
	if pid == 0 {
		pid = flockOwner(path)
	}
	if pid != 0 && pid != h.pid {
		return holder{pid: pid}
	}
	if h.pid != 0 && !alive(h.pid) {
		return holder{}
	}
	return h
}

// flockOwner returns the PID of the process /proc/locks says holds a
// flock on path (a file or a directory), or 0 when it cannot tell.
func flockOwner(path string) int {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF"; waiters
	// have "->" after the number. The device is matched by inode alone:
	// a stacked filesystem may report another device than stat does.
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		parts := strings.Split(f[5], ":")
		if len(parts) != 3 || parts[2] != strconv.FormatUint(sys.Ino, 10) {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil {
			return pid
		}
	}
	return 0
}

// processStopped reports whether the process of this PID is stopped
// (state T, by a signal, or t, by a debugger), as /proc/PID/stat says;
// false when it cannot tell.
func processStopped(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(data[i+1:]))
	return len(f) > 0 && (f[0] == "T" || f[0] == "t")
}

// alive reports whether a process of this PID exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// StoreRecordFile holds, while a process holds the store, how other
// processes on this machine reach its server: the URL on the first line
// (as before there was more), then "pid N", "fsync MODE" and "auth nkey"
// or "auth none". It is written once the server serves and removed when
// it stops; one left by a holder that was killed is recognised by the
// lock, which no longer holds, and never trusted.
const StoreRecordFile = "nats-url"

// storeRecord is what a store's holder says about its server.
type storeRecord struct {
	url   string
	pid   int
	fsync Durability
	auth  bool // clients authenticate with the store's credential
}

func (r storeRecord) encode() []byte {
	auth := "none"
	if r.auth {
		auth = "nkey"
	}
	return fmt.Appendf(nil, "%s\npid %d\nfsync %s\nauth %s\n", r.url, r.pid, r.fsync, auth)
}

// readStoreRecord reads the store's record; ok is false when there is
// none or it is not one (half a hand edit, an older factline's).
func readStoreRecord(dir string) (r storeRecord, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, StoreRecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("store %s: %w", dir, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	u, err := url.Parse(strings.TrimSpace(lines[0]))
	if err != nil || u.Host == "" {
		return r, false, nil
	}
	r.url = u.String()
	for _, line := range lines[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch k {
		case "pid":
			r.pid, _ = strconv.Atoi(v)
		case "fsync":
			r.fsync, _ = ParseDurability(v)
		case "auth":
			r.auth = v == "nkey"
		}
	}
	return r, r.pid > 0 && r.fsync != "", nil
}

// writeStoreRecord writes the record (atomically: a reader sees the old
// one or the new one); the returned function removes it again, if it is
// still this one.
func writeStoreRecord(dir string, r storeRecord) (func(), error) {
	path := filepath.Join(dir, StoreRecordFile)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, r.encode(), 0o644); err != nil {
		return nil, fmt.Errorf("record the store's server: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("record the store's server: %w", err)
	}
	return func() {
		if got, ok, _ := readStoreRecord(dir); ok && got.pid == r.pid && got.url == r.url {
			_ = os.Remove(path)
		}
	}, nil
}

// currentRecord returns the record of the store's live holder: ok only
// when the record was written by the process that holds the lock now (a
// record of a holder that died names a dead PID, or another than the
// kernel's).
func currentRecord(dir string) (storeRecord, holder, bool, error) {
	h := storeHolder(dir)
	r, ok, err := readStoreRecord(dir)
	if err != nil || !ok {
		return r, h, false, err
	}
	if !alive(r.pid) || (h.pid != 0 && h.pid != r.pid) {
		return r, h, false, nil
	}
	if h.pid == 0 {
		h.pid = r.pid
	}
	return r, h, true, nil
}
