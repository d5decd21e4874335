package sandbox

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// keyFor is the probe key of cfg in dir for this process, read from
// /proc/self and the work dir's path.
func keyFor(cfg Config, bash, dir string) (probeKey, error) {
	k := probeKey{cfg: cfg, bash: bash, path: os.Getenv("PATH")}
	k.cfg.WorkDir, k.cfg.Engine = "", Engine{}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return probeKey{}, fmt.Errorf("probe key: %w", err)
	}
	var self strings.Builder
	for _, line := range strings.Split(string(status), "\n") {
		name, _, _ := strings.Cut(line, ":")
		switch name {
		case "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
			self.WriteString(line + "\n")
		}
	}
	k.self = self.String()
	var ns strings.Builder
	for _, n := range []string{"mnt", "net", "user", "ipc", "pid", "uts", "cgroup"} {
		// A kernel without a kind of namespace has no link for it: the
		// same on every call.
		l, _ := os.Readlink("/proc/self/ns/" + n)
		ns.WriteString(l + " ")
	}
	k.ns = ns.String()
	var limits strings.Builder
	for _, r := range []int{unix.RLIMIT_CPU, unix.RLIMIT_AS, unix.RLIMIT_NOFILE, unix.RLIMIT_NPROC, unix.RLIMIT_FSIZE, unix.RLIMIT_CORE} {
		var rl unix.Rlimit
		if err := unix.Getrlimit(r, &rl); err != nil {
			return probeKey{}, fmt.Errorf("probe key: getrlimit %d: %w", r, err)
		}
		fmt.Fprintf(&limits, "%d:%d ", rl.Cur, rl.Max)
	}
	k.limits = limits.String()
	if k.mounts, err = mountsKey(cfg); err != nil {
		return probeKey{}, err
	}
	if k.dir, err = dirKind(dir); err != nil {
		return probeKey{}, err
	}
	return k, nil
}

// mountsKey is what of the host's mount table the probe depends on: the
// mounts a read-only host remounts (every one but those a private tmp
// covers), when that is asked of a root service; nothing otherwise. The
// mounts other programs make and remove below /tmp then do not cost a
// probe.
func mountsKey(cfg Config) ([sha256.Size]byte, error) {
	if !cfg.ReadOnlyHost || os.Geteuid() != 0 {
		return [sha256.Size]byte{}, nil
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("probe key: %w", err)
	}
	h := sha256.New()
	for _, line := range strings.Split(string(info), "\n") {
		if m, ok := parseMountInfo(line); ok && cfg.PrivateTmp && under(m.point, tmpPlaces) {
			continue
		}
		h.Write([]byte(line + "\n"))
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// dirKind describes the way to dir as the probe depends on it: which of
// the places an attempt's mount namespace treats apart it lies below,
// and for each directory from / down to it its mount, device, type and
// mode, and owner. A path through a symbolic link is its own kind.
func dirKind(dir string) (string, error) {
	abs := cleanPath(dir)
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("probe key: %w", err)
	}
	if real != abs {
		return "path " + abs, nil
	}
	var b strings.Builder
	for _, p := range slices.Concat(tmpPlaces, sharedPlaces, kernelOwned) {
		if under(abs, []string{p}) {
			b.WriteString("below " + p + "; ")
		}
	}
	var way []string
	for p := abs; ; p = filepath.Dir(p) {
		way = append(way, p)
		if p == "/" {
			break
		}
	}
	slices.Reverse(way)
	for _, p := range way {
		var st unix.Statx_t
		err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW,
			unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_UID|unix.STATX_GID|unix.STATX_MNT_ID, &st)
		if err != nil {
			return "", fmt.Errorf("probe key: statx %s: %w", p, err)
		}
		var mnt uint64 // a kernel before 5.8 does not say: the device and the mount table tell
		if st.Mask&unix.STATX_MNT_ID != 0 {
			mnt = st.Mnt_id
		}
		fmt.Fprintf(&b, "%d %d:%d %o %d %d / ", mnt, st.Dev_major, st.Dev_minor, st.Mode, st.Uid, st.Gid)
	}
	return b.String(), nil
}
