package sandbox

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// tmpPlaces are the directories every user may write on a usual host,
// which an attempt's mount namespace covers with tmpfs of its own.
var tmpPlaces = []string{"/tmp", "/var/tmp", "/dev/shm"}

// sharedPlaces are where every user may write on a usual Linux host:
// what an attempt's uid left there is removed when the attempt ends, unless
// its mount namespace made them its own and the rest read-only.
var sharedPlaces = []string{"/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock", "/var/lock", "/var/crash"}

// nsOptions say what an attempt's mount namespace holds.
type nsOptions struct {
	tmp      bool   // tmpfs on tmpPlaces (and an IPC namespace of its own)
	tmpSize  uint64 // bytes, each tmpfs
	readOnly bool   // every other mount but /proc, /sys and /dev read-only
	proc     bool   // /proc of its own, hiding other users' processes
}

// any reports whether the attempt needs a mount namespace at all.
func (o nsOptions) any() bool { return o.tmp || o.readOnly || o.proc }

// under reports whether path is one of roots or below one.
func under(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}

// mount is one line of a mountinfo file.
type mount struct {
	point  string   // where it is mounted
	opts   []string // per-mount options (rw, ro, nosuid, ...)
	fstype string
	super  []string // the file system's options (size=..., hidepid=...)
}

// mountInfo reads a mountinfo file (proc(5)).
func mountInfo(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := parseMountInfo(sc.Text()); ok {
			ms = append(ms, m)
		}
	}
	return ms, sc.Err()
}

// parseMountInfo parses one mountinfo line: "id parent major:minor root
// point options [optional...] - fstype source super".
func parseMountInfo(line string) (mount, bool) {
	f := strings.Fields(line)
	sep := slices.Index(f, "-")
	if sep < 6 || len(f) < sep+4 {
		return mount{}, false
	}
	return mount{point: unescapeMount(f[4]), opts: strings.Split(f[5], ","),
		fstype: f[sep+1], super: strings.Split(f[sep+3], ",")}, true
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cleanPath is p made absolute and clean, as mountinfo names it.
func cleanPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}
