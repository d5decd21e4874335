package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// mountNS is an attempt's mount namespace: one OS thread that unshared
// it, made its mounts, and starts the attempt's commands, which inherit
// it. Unsharing a mount namespace is per thread (unlike a user
// namespace, it is allowed in a process with many threads), so the
// service itself never sees these mounts. The thread stays locked to its
// goroutine and ends with it (the runtime then kills it rather than
// reuse a thread in another namespace); the namespace, and the tmpfs in
// it, go when the last process in it ends.
type mountNS struct {
	calls chan func()
	ended chan struct{}
}

// newMountNS makes a mount namespace as o says, in which the directories
// an attempt writes (dirs: its workspace, HOME, TMPDIR) are bound at the
// paths they have on the host, writable, whatever covers or protects the
// mounts they are on.
func newMountNS(o nsOptions, dirs []string) (*mountNS, error) {
	ns := &mountNS{calls: make(chan func()), ended: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(ns.ended)
		// Never unlocked: this thread's mounts must not serve another
		// goroutine, so it ends with this one.
		runtime.LockOSThread()
		if err := o.setup(dirs); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for f := range ns.calls {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("mount namespace: %w", err)
	}
	return ns, nil
}

// do runs f on the namespace's thread: a process f starts is in it.
func (ns *mountNS) do(f func()) {
	done := make(chan struct{})
	ns.calls <- func() { defer close(done); f() }
	<-done
}

// close ends the namespace's thread; the namespace goes with the last
// process in it (the caller kills those first).
func (ns *mountNS) close() {
	close(ns.calls)
	<-ns.ended
}

// setup runs on the locked thread: it unshares the mount (and IPC)
// namespace and makes the mounts.
func (o nsOptions) setup(dirs []string) error {
	flags := unix.CLONE_NEWNS
	if o.tmp {
		// POSIX message queues and System V shared memory outlive their
		// processes like files in /dev/shm do: they go with the namespace.
		flags |= unix.CLONE_NEWIPC
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	// Nothing mounted here may reach the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make every mount private: %w", err)
	}
	// Hold the attempt's directories before anything covers them (the
	// work dir is often below /tmp).
	type held struct {
		path string
		fd   int
	}
	var hold []held
	defer func() {
		for _, h := range hold {
			_ = unix.Close(h.fd)
		}
	}()
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", d, err)
		}
		hold = append(hold, held{cleanPath(d), fd})
	}
	ours := map[string]bool{}
	var covering []string // our tmpfs mounts: what was mounted below them is out of reach
	if o.tmp {
		opts := "mode=1777,size=" + strconv.FormatUint(o.tmpSize, 10)
		for _, p := range tmpPlaces {
			if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
				continue // absent here, or a link to one of the others
			}
			if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
				return fmt.Errorf("mount a tmpfs on %s: %w", p, err)
			}
			ours[p] = true
			covering = append(covering, p)
		}
		// The host's message queue file system would create queues in the
		// host's IPC namespace: this one shows the attempt's own.
		if fi, err := os.Lstat("/dev/mqueue"); err == nil && fi.IsDir() {
			if err := unix.Mount("mqueue", "/dev/mqueue", "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				return fmt.Errorf("mount a message queue file system on /dev/mqueue: %w", err)
			}
		}
	}
	for _, h := range hold {
		// Below a fresh tmpfs the path is made again (its directories
		// root's, passable but not listable) and the directory bound there.
		if err := os.MkdirAll(h.path, 0o711); err != nil {
			return fmt.Errorf("make %s in the namespace: %w", h.path, err)
		}
		src := "/proc/self/fd/" + strconv.Itoa(h.fd)
		if err := unix.Mount(src, h.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", h.path, err)
		}
		ours[h.path] = true
	}
	if o.readOnly {
		var bound []string
		for _, h := range hold {
			bound = append(bound, h.path)
		}
		if err := readOnlyMounts(ours, covering, bound); err != nil {
			return err
		}
	}
	if o.proc {
		// A proc instance of its own (kernels since 5.8 keep hidepid per
		// mount; older ones reject "invisible" rather than change the
		// host's /proc).
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hidepid=invisible"); err != nil {
			return fmt.Errorf("mount a /proc of its own: %w", err)
		}
	}
	return nil
}

// kernelOwned are the trees left as they are by readOnlyMounts: the
// kernel's own file systems, where a user creates no files, and which
// hold the devices a command writes to (/dev/null, terminals).
var kernelOwned = []string{"/proc", "/sys", "/dev"}

// readOnlyMounts makes every mount of the thread's namespace read-only
// but the kernel's own trees and ours (the tmpfs and the bound
// directories), keeping each mount's other flags. A host mount below one
// of our tmpfs mounts (covering) is hidden by it and left alone: its path
// now names a directory of the tmpfs (made again to bind a held directory
// there), which a remount refuses as no mount. What the bound directories
// brought with them (below bound) is reachable and is made read-only.
func readOnlyMounts(ours map[string]bool, covering, bound []string) error {
	mounts, err := mountInfo("/proc/thread-self/mountinfo")
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if ours[m.point] || slices.Contains(m.opts, "ro") || under(m.point, kernelOwned) {
			continue
		}
		if under(m.point, covering) && !under(m.point, bound) {
			continue
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		for _, o := range m.opts {
			flags |= mountFlags[o]
		}
		err := unix.Mount("", m.point, "", flags, "")
		if errors.Is(err, fs.ErrNotExist) {
			continue // below a mount that now covers it: out of reach
		}
		if err != nil {
			return fmt.Errorf("make %s read-only: %w", m.point, err)
		}
	}
	return nil
}

// mountFlags are the per-mount options a read-only remount keeps.
var mountFlags = map[string]uintptr{
	"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
	"strictatime": unix.MS_STRICTATIME,
}
