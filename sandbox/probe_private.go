package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// describeMounts records the features of the attempt's mount namespace
// (private_tmp, read_only_host, private_proc) from what the probe saw
// inside it: its mounts, whether it could write its own directory, and
// whether process 1 was visible.
func (c *Containment) describeMounts(cfg Config, got, base probed, unsupported map[string]string) []events.ContainmentFeature {
	feat := func(name, state string, limit uint64, detail string) events.ContainmentFeature {
		return events.ContainmentFeature{Name: name, State: state, Limit: limit, Detail: detail}
	}
	var fs []events.ContainmentFeature
	// The last line naming a mount point is the mount on top.
	top := map[string]mount{}
	for _, m := range got.mounts {
		top[m.point] = m
	}
	switch {
	case !cfg.PrivateTmp:
		fs = append(fs, feat(FeaturePrivateTmp, events.ContainmentOff, 0, ""))
	case !c.mounts.tmp:
		fs = append(fs, feat(FeaturePrivateTmp, events.ContainmentUnsupported, 0, unsupported["tmp"]))
	case got.mntns == base.mntns:
		fs = append(fs, feat(FeaturePrivateTmp, events.ContainmentUnsupported, 0, "the command still sees the service's own mount namespace"))
	default:
		var size uint64
		var bad []string
		for _, p := range tmpPlaces {
			if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
				continue
			}
			m, ok := top[p]
			n := tmpfsSize(m)
			if !ok || m.fstype != "tmpfs" || n == 0 {
				bad = append(bad, fmt.Sprintf("%s is %q", p, m.fstype))
				continue
			}
			if size == 0 || n > size {
				size = n
			}
		}
		if len(bad) > 0 {
			fs = append(fs, feat(FeaturePrivateTmp, events.ContainmentUnsupported, 0, "the command sees "+strings.Join(bad, ", ")))
			break
		}
		fs = append(fs, feat(FeaturePrivateTmp, events.ContainmentActive, size,
			"own mount and IPC namespace per attempt: /tmp, /var/tmp and /dev/shm are tmpfs of their own, shared by the attempt's commands and gone with it"))
	}
	switch {
	case !cfg.ReadOnlyHost:
		fs = append(fs, feat(FeatureReadOnlyHost, events.ContainmentOff, 0, ""))
	case !c.mounts.readOnly:
		fs = append(fs, feat(FeatureReadOnlyHost, events.ContainmentUnsupported, 0, unsupported["ro"]))
	case !hasOpt(top["/"], "ro"):
		fs = append(fs, feat(FeatureReadOnlyHost, events.ContainmentUnsupported, 0, "the command sees / writable"))
	case !got.wrote:
		fs = append(fs, feat(FeatureReadOnlyHost, events.ContainmentUnsupported, 0, "the command cannot write its own directory"))
	default:
		fs = append(fs, feat(FeatureReadOnlyHost, events.ContainmentActive, 0,
			"every mount of the host but /proc, /sys and /dev is read-only: a command writes only its workspace, HOME, TMPDIR and its private tmpfs"))
	}
	switch {
	case !cfg.PrivateProc:
		fs = append(fs, feat(FeaturePrivateProc, events.ContainmentOff, 0, ""))
	case !c.mounts.proc:
		fs = append(fs, feat(FeaturePrivateProc, events.ContainmentUnsupported, 0, unsupported["proc"]))
	case got.uid == 0:
		fs = append(fs, feat(FeaturePrivateProc, events.ContainmentUnsupported, 0, "commands run as root, from whom /proc hides no process"))
	case !got.procHidden:
		fs = append(fs, feat(FeaturePrivateProc, events.ContainmentUnsupported, 0, "the command sees process 1"))
	default:
		fs = append(fs, feat(FeaturePrivateProc, events.ContainmentActive, 0,
			"a /proc of its own that shows a command only its user's processes (hidepid=invisible): no other command line is readable"))
	}
	return fs
}

// describeOwnUser records what an attempt's own uid makes possible: its
// directories closed to other attempts (private_workspace) and whatever it
// leaves anywhere removed when it ends (leftover_files).
func (c *Containment) describeOwnUser(cfg Config, got probed, root bool) []events.ContainmentFeature {
	feat := func(name, state, detail string) events.ContainmentFeature {
		return events.ContainmentFeature{Name: name, State: state, Detail: detail}
	}
	switch {
	case !root:
		return []events.ContainmentFeature{
			feat(FeatureLeftovers, events.ContainmentUnsupported, fmt.Sprintf("commands run as the service's own uid %d: what they leave outside the workspace cannot be told from the service's own files", got.uid)),
			feat(FeatureWorkspace, events.ContainmentUnsupported, fmt.Sprintf("every attempt's commands run as the service's own uid %d: one attempt may read another's workspace", got.uid)),
		}
	case !cfg.Unprivileged:
		return []events.ContainmentFeature{
			feat(FeatureLeftovers, events.ContainmentOff, "commands run as root"),
			feat(FeatureWorkspace, events.ContainmentOff, "commands run as root"),
		}
	case !c.dropUID || got.uid == 0:
		why := "no uid of its own per attempt (see unprivileged_user): commands run as root"
		return []events.ContainmentFeature{
			feat(FeatureLeftovers, events.ContainmentUnsupported, why),
			feat(FeatureWorkspace, events.ContainmentUnsupported, why),
		}
	}
	ws := feat(FeatureWorkspace, events.ContainmentActive, "the workspace, HOME and TMPDIR are 0700 and the attempt's uid's; the directory holding them is passable, not listable")
	if want := "700:" + strconv.FormatUint(got.uid, 10); got.dir != want {
		ws = feat(FeatureWorkspace, events.ContainmentUnsupported, fmt.Sprintf("the command's directory is %s (mode:uid), want %s", got.dir, want))
	}
	left := feat(FeatureLeftovers, events.ContainmentActive,
		"when the attempt ends every process of its uid is killed and every file of it in "+strings.Join(sharedPlaces, ", ")+
			", the work dir and the world-writable directories below them is removed")
	tmp, ro := c.mounts.tmp && got.mntns != "", c.mounts.readOnly && hasOpt(mountAt(got.mounts, "/"), "ro")
	if tmp && ro {
		left.Detail = "nothing outside the attempt's own directories and private tmpfs is writable to it; when it ends every process of its uid is killed and its namespace goes"
	}
	return []events.ContainmentFeature{left, ws}
}

// mountAt is the mount on top at point.
func mountAt(ms []mount, point string) mount {
	var top mount
	for _, m := range ms {
		if m.point == point {
			top = m
		}
	}
	return top
}

// hasOpt reports whether a mount has the per-mount option o.
func hasOpt(m mount, o string) bool {
	for _, x := range m.opts {
		if x == o {
			return true
		}
	}
	return false
}

// tmpfsSize is a tmpfs's size in bytes from its options (size=262144k);
// 0 when it has none.
func tmpfsSize(m mount) uint64 {
	for _, o := range m.super {
		v, ok := strings.CutPrefix(o, "size=")
		if !ok {
			continue
		}
		mult := uint64(1)
		switch {
		case strings.HasSuffix(v, "k"):
			mult, v = 1<<10, strings.TrimSuffix(v, "k")
		case strings.HasSuffix(v, "m"):
			mult, v = 1<<20, strings.TrimSuffix(v, "m")
		case strings.HasSuffix(v, "g"):
			mult, v = 1<<30, strings.TrimSuffix(v, "g")
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0
		}
		return n * mult
	}
	return 0
}
