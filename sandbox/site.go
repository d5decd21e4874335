package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Owner names one process of this host apart from every other, across PID
// reuse and reboots: the boot it runs in, its PID namespace, its PID, and
// when it started. A directory or container carrying it belongs to that
// process; once the process is gone, so is every claim to them.
type Owner struct {
	// Boot is the start of the kernel's boot id (8 hex digits).
	Boot string
	// PIDNS is the inode of the process's PID namespace.
	PIDNS uint64
	// PID is its process ID in that namespace.
	PID int
	// Start is its start time, in clock ticks since boot (proc(5)).
	Start uint64
}

// String is the owner as directory names and labels carry it:
// boot.pidns.pid.start.
func (o Owner) String() string {
	return fmt.Sprintf("%s.%d.%d.%d", o.Boot, o.PIDNS, o.PID, o.Start)
}

// ParseOwner reads an owner written by String.
func ParseOwner(s string) (Owner, error) {
	f := strings.Split(s, ".")
	if len(f) != 4 || !bootRe.MatchString(f[0]) {
		return Owner{}, fmt.Errorf("owner %q: want boot.pidns.pid.start", s)
	}
	ns, err1 := strconv.ParseUint(f[1], 10, 64)
	pid, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || pid <= 0 {
		return Owner{}, fmt.Errorf("owner %q: want boot.pidns.pid.start of numbers", s)
	}
	return Owner{Boot: f[0], PIDNS: ns, PID: pid, Start: start}, nil
}

var bootRe = regexp.MustCompile(`^[0-9a-f]{8}$`)

// liveness is what can be told of an owner from this process.
type liveness int

const (
	ownerAlive liveness = iota
	ownerDead
	// ownerUnknown: a process of another PID namespace, whose PIDs mean
	// nothing here. Its work is never taken for a dead owner's.
	ownerUnknown
)

// Site is a directory a service instance works in (an attempt's, a copy
// of a candidate being graded, its probe's), named after the instance's
// kind and its Owner, so that when the instance dies (a SIGKILL leaves it
// no chance to clean up) the next instance of its kind can tell the
// directory, and what it holds, belongs to a dead process. Others may pass
// through it (commands run as other users) but not list it.
type Site struct {
	dir string
}

// LabelOwner marks every container a service makes with its Owner, so
// that the containers of a dead instance are found and removed.
const LabelOwner = "io.factline.owner"

// kindRe is what a site's kind may be, labelRe its label: they are parts
// of a file name, and a label (a run, a subject token) holds no dot.
var (
	kindRe  = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	labelRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,160}$`)
)

// OpenSite makes a directory of the calling process in workDir, of the
// given kind (runner, grader) and with a label saying what it holds (a
// run): factline-<kind>.<owner>.<label>-<random>, mode 0711.
func OpenSite(workDir, kind, label string) (*Site, error) {
	if !kindRe.MatchString(kind) {
		return nil, fmt.Errorf("site: kind %q: want lower-case letters and digits", kind)
	}
	if !labelRe.MatchString(label) {
		return nil, fmt.Errorf("site: label %q: want 1 to 160 of A-Z a-z 0-9 - _", label)
	}
	me, err := Self()
	if err != nil {
		return nil, fmt.Errorf("site: %w", err)
	}
	dir, err := os.MkdirTemp(workDir, sitePrefix(kind)+me.String()+"."+label+"-")
	if err != nil {
		return nil, fmt.Errorf("site: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("site: %w", err)
	}
	return &Site{dir: dir}, nil
}

func sitePrefix(kind string) string { return "factline-" + kind + "." }

// probeKind names the sites Probe runs its commands in; every kind's Reap
// removes those of dead owners.
const probeKind = "probe"

// probeDir makes the directory one probe command runs in, below dir: a
// site, so that a service killed mid-probe leaves nothing Reap misses
// (where owners cannot be told, a plain temporary directory).
func probeDir(dir string) (string, error) {
	if _, err := Self(); err != nil {
		return os.MkdirTemp(dir, ".factline-probe-")
	}
	s, err := OpenSite(dir, probeKind, "probe")
	if err != nil {
		return "", err
	}
	return s.Dir(), nil
}

// Dir is the site's directory.
func (s *Site) Dir() string {
	if s == nil {
		return ""
	}
	return s.dir
}

// Close removes the site's directory with whatever is still in it.
func (s *Site) Close() error {
	if s == nil {
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	return nil
}

// Reaped is what Reap removed.
type Reaped struct {
	// Dirs are the dead instances' directories.
	Dirs []string
	// Containers are their containers.
	Containers []string
	// Processes is how many processes of their attempts' users were
	// still running and were killed.
	Processes int
	// Files is how many files and directories of those users were
	// removed from the places every user may write.
	Files int
}

// Empty reports whether nothing was reaped.
func (r Reaped) Empty() bool {
	return len(r.Dirs) == 0 && len(r.Containers) == 0 && r.Processes == 0 && r.Files == 0
}

// reapMu keeps the reapers of one process from doing the same work twice.
var reapMu sync.Mutex

// Reap removes what dead instances of a kind left in workDir: for each
// site whose owner is dead (another boot, or no process of that PID and
// start time), every process of its users is killed (commands
// that outlived their service, with the mount namespaces they hold), what
// those users left in the places every user may write is removed, the
// owner's containers (by LabelOwner, through engine) are removed, and
// then the directory. A site of a live owner, or of one in another PID
// namespace, is never touched, nor is a user one of those still uses.
// A dead site whose containers cannot be removed is kept, to be tried
// again. Concurrent reapers (other processes) are harmless: each removal
// tolerates the other's.
func Reap(ctx context.Context, workDir, kind string, engine Engine) (Reaped, error) {
	var r Reaped
	if !kindRe.MatchString(kind) {
		return r, fmt.Errorf("reap: kind %q: want lower-case letters and digits", kind)
	}
	reapMu.Lock()
	defer reapMu.Unlock()
	entries, err := os.ReadDir(workDir)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("reap: %w", err)
	}
	type site struct {
		path  string
		owner Owner
	}
	var dead []site
	inUse := map[uint32]bool{}
	for _, e := range entries {
		owner, ok := siteOwner(e.Name(), kind)
		if !ok {
			// A probe's directory belongs to whichever kind probed.
			owner, ok = siteOwner(e.Name(), probeKind)
		}
		if !ok || !e.IsDir() {
			continue
		}
		p := filepath.Join(workDir, e.Name())
		if owner.liveness() == ownerDead {
			dead = append(dead, site{p, owner})
			continue
		}
		for _, uid := range siteUsers(p) {
			inUse[uid] = true
		}
	}
	var errs []error
	roots := append(slices.Clone(sharedPlaces), workDir)
	for _, d := range dead {
		for _, uid := range siteUsers(d.path) {
			if inUse[uid] {
				continue
			}
			r.Processes += killUID(uid)
			n, err := sweepFiles(uid, roots)
			r.Files += n
			if err != nil {
				errs = append(errs, err)
			}
		}
		if names, err := removeOwnedContainers(ctx, engine, d.owner); err != nil {
			errs = append(errs, fmt.Errorf("the containers of %s: %w", d.path, err))
			continue
		} else {
			r.Containers = append(r.Containers, names...)
		}
		if err := os.RemoveAll(d.path); err != nil {
			errs = append(errs, err)
			continue
		}
		r.Dirs = append(r.Dirs, d.path)
	}
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("reap: %w", err)
	}
	return r, nil
}

// siteOwner reads the owner out of a site's name of the given kind
// (factline-<kind>.<boot>.<pidns>.<pid>.<start>.<label>-<random>).
func siteOwner(name, kind string) (Owner, bool) {
	rest, ok := strings.CutPrefix(name, sitePrefix(kind))
	if !ok {
		return Owner{}, false
	}
	f := strings.SplitN(rest, ".", 5)
	if len(f) != 5 {
		return Owner{}, false
	}
	o, err := ParseOwner(strings.Join(f[:4], "."))
	return o, err == nil
}

// siteUsers are the fresh uids owning what a site holds (its ws, home and
// tmp, and what is in them, one level down): the users its commands ran
// as.
func siteUsers(site string) []uint32 {
	var uids []uint32
	top, _ := os.ReadDir(site)
	for _, a := range top {
		p := filepath.Join(site, a.Name())
		paths := []string{p}
		if a.IsDir() {
			subs, _ := os.ReadDir(p)
			for _, s := range subs {
				paths = append(paths, filepath.Join(p, s.Name()))
			}
		}
		for _, q := range paths {
			var st syscall.Stat_t
			if syscall.Lstat(q, &st) == nil && freshRange(st.Uid) && !slices.Contains(uids, st.Uid) {
				uids = append(uids, st.Uid)
			}
		}
	}
	return uids
}

// freshRange reports whether uid is one freshUID picks: no one else's.
func freshRange(uid uint32) bool { return uid >= 1_000_000_000 && uid < 2_000_000_000 }

// removeOwnedContainers removes the containers labelled with owner. An
// engine that is not installed holds none.
func removeOwnedContainers(ctx context.Context, engine Engine, owner Owner) ([]string, error) {
	e := engine.orDefault()
	if _, err := exec.LookPath(e.Bin); err != nil {
		return nil, nil
	}
	return e.RemoveContainers(ctx, map[string]string{LabelOwner: owner.String()})
}
