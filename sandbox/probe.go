package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/factline/factline/events"
)

// probeScript prints, one key=value a line, what a contained process
// sees: its limits, its uid, its network and mount namespaces, whether
// process 1 is visible, the mode and owner of its directory and whether it
// may write there, and its mounts.
const probeScript = `echo cpu=$(ulimit -t); echo as=$(ulimit -v); echo nofile=$(ulimit -n); echo nproc=$(ulimit -u); echo fsize=$(ulimit -f)
echo uid=$(id -u)
echo net=$(readlink /proc/self/ns/net)
echo mnt=$(readlink /proc/self/ns/mnt)
if [ -e /proc/1/cmdline ]; then echo proc1=visible; else echo proc1=hidden; fi
echo dir=$(stat -c %a:%u .)
if : > .factline-probe 2>/dev/null; then echo write=ok; fi
while IFS= read -r l; do echo "mount=$l"; done < /proc/self/mountinfo`

// probed is what one probe run saw.
type probed struct {
	limits       Limits
	uid          uint64
	netns, mntns string
	procHidden   bool   // process 1 is not visible
	dir          string // mode:uid of the command's directory
	wrote        bool   // it could write its directory
	mounts       []mount
}

// Probe finds out which of the asked features this host grants, by
// running a tiny contained command with each feature alone and then with
// all that worked. Each resource limit is a feature of its own: a host that
// refuses one (a hard limit lowered below the asked value, which only
// CAP_SYS_RESOURCE may raise) loses that one, never the others. A feature
// the host refuses, or that would not bind (the process limit for root),
// is recorded as unsupported with the reason; it is never claimed.
//
// The answer is kept for the life of the process: a later Probe with the
// same inputs (the configuration, this process's credentials and limits,
// the host's mounts, a work dir of the same kind) runs no command, and
// callers probing the same inputs at once share one probe (probecache.go
// says why that is sound). A probe that failed, or whose context ended, is
// not kept.
func Probe(ctx context.Context, cfg Config) (*Containment, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, fmt.Errorf("containment probe: %w", err)
	}
	dir := cfg.WorkDir
	if dir == "" {
		dir = os.TempDir()
	}
	if cfg.TmpSize == 0 {
		cfg.TmpSize = DefaultTmpSize
	}
	f, err := probes.find(ctx, cfg, bash, dir)
	if err != nil {
		return nil, err
	}
	return f.containment(cfg, dir), nil
}

// probeHost runs the probe commands in dir: the plain one, one per asked
// feature, and one with every feature that worked.
func probeHost(ctx context.Context, cfg Config, bash, dir string) (*finding, error) {
	f, err := runProbes(ctx, cfg, bash, dir)
	if ctxErr := ctx.Err(); ctxErr != nil {
		// A command may have failed for the context's sake, not the
		// host's: nothing here says what the host grants.
		if err != nil {
			return nil, fmt.Errorf("%w (the probe's context ended: %w)", err, ctxErr)
		}
		return nil, fmt.Errorf("containment probe: the probe's context ended: %w", ctxErr)
	}
	return f, err
}

// runProbes is probeHost without the look at its context.
func runProbes(ctx context.Context, cfg Config, bash, dir string) (*finding, error) {
	c := &Containment{bash: bash}
	base, err := c.probe(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("containment probe: a plain command in its own session fails: %w", err)
	}
	root := os.Geteuid() == 0
	f := &finding{base: base, root: root, unsupported: map[string]string{}, dir: dir}

	var asked []string
	for _, l := range limitFeatures {
		if *l.of(&cfg.Limits) > 0 {
			asked = append(asked, l.name)
		}
	}
	if cfg.Unprivileged && root {
		asked = append(asked, "uid")
	}
	if cfg.Network {
		asked = append(asked, "net")
	}
	for _, m := range []struct {
		f  string
		on bool
	}{{"tmp", cfg.PrivateTmp}, {"ro", cfg.ReadOnlyHost}, {"proc", cfg.PrivateProc}} {
		switch {
		case !m.on:
		case !root:
			// Only a thread of its own can hold the attempt's mount
			// namespace, and without CAP_SYS_ADMIN a process with many
			// threads cannot make one (a user namespace would need a
			// process of one thread).
			f.unsupported[m.f] = fmt.Sprintf("a mount namespace per attempt needs root (CAP_SYS_ADMIN); the service runs as uid %d", os.Geteuid())
		default:
			asked = append(asked, m.f)
		}
	}
	for _, feat := range asked {
		try := &Containment{bash: bash}
		apply(try, feat, cfg, root)
		if _, err := try.probe(ctx, dir); err != nil {
			f.unsupported[feat] = err.Error()
			f.timedOut = f.timedOut || errors.Is(err, errProbeTimedOut)
			continue
		}
		apply(c, feat, cfg, root)
	}
	if f.got, err = c.probe(ctx, dir); err != nil {
		return nil, fmt.Errorf("containment probe: the features that work alone fail together: %w", err)
	}
	f.c = *c
	return f, nil
}

// limitFeatures are the resource limits, each probed and applied on its
// own, with the field of Limits each one sets.
var limitFeatures = []struct {
	name string
	of   func(*Limits) *uint64
}{
	{FeatureCPU, func(l *Limits) *uint64 { return &l.CPUSeconds }},
	{FeatureAddressSpace, func(l *Limits) *uint64 { return &l.AddressSpace }},
	{FeatureOpenFiles, func(l *Limits) *uint64 { return &l.OpenFiles }},
	{FeatureProcesses, func(l *Limits) *uint64 { return &l.Processes }},
	{FeatureFileSize, func(l *Limits) *uint64 { return &l.FileSize }},
}

// apply turns on, in c, the asked feature f: one resource limit (by its
// feature name), "uid", "net", or a part of the attempt's mount namespace
// ("tmp", "ro", "proc").
func apply(c *Containment, f string, cfg Config, root bool) {
	switch f {
	case "uid":
		c.dropUID = true
	case "net":
		c.netns, c.userns = true, !root
	case "tmp":
		c.mounts.tmp, c.mounts.tmpSize = true, cfg.TmpSize
	case "ro":
		c.mounts.readOnly = true
	case "proc":
		c.mounts.proc = true
	default:
		for _, l := range limitFeatures {
			if l.name == f {
				*l.of(&c.limits) = *l.of(&cfg.Limits)
			}
		}
	}
}

// errProbeTimedOut is a probe command that ran out of time.
var errProbeTimedOut = errors.New("timed out")

// probeTap, when set, is called before each probe command runs, with the
// prober's context and its work dir. Only tests set it: to count the
// commands a Probe ran and to act between them.
var probeTap atomic.Pointer[func(ctx context.Context, workDir string)]

// probeWaitTap, when set, is called when a Probe waits for another
// caller's probe of the same inputs instead of running its own, with its
// work dir. Only tests set it.
var probeWaitTap atomic.Pointer[func(workDir string)]

// probe runs probeScript contained as c says, as an attempt's command in
// a directory of its own below dir, and reads what it saw.
func (c *Containment) probe(ctx context.Context, dir string) (probed, error) {
	if tap := probeTap.Load(); tap != nil {
		(*tap)(ctx, dir)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	pd, err := probeDir(dir)
	if err != nil {
		return probed{}, err
	}
	defer os.RemoveAll(pd)
	sb := c.ForAttempt(pd)
	defer func() { _ = sb.Close(context.WithoutCancel(ctx)) }()
	res, err := sb.Run(ctx, Command{Script: probeScript, Dir: pd, Env: []string{"PATH=" + os.Getenv("PATH")}, OutputCap: 1 << 20})
	switch {
	case err != nil:
		return probed{}, err
	case res.TimedOut:
		return probed{}, fmt.Errorf("%w: %s", errProbeTimedOut, strings.TrimSpace(res.Output))
	case res.ExitCode != 0:
		return probed{}, fmt.Errorf("exit status %d: %s", res.ExitCode, strings.TrimSpace(res.Output))
	}
	num := func(s string) uint64 {
		if s == "unlimited" {
			return 0
		}
		n, _ := strconv.ParseUint(s, 10, 64)
		return n
	}
	var got probed
	keys := map[string]bool{}
	for _, line := range strings.Split(res.Output, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		keys[k] = true
		switch k {
		case "cpu":
			got.limits.CPUSeconds = num(v)
		case "as":
			got.limits.AddressSpace = num(v) * 1024
		case "nofile":
			got.limits.OpenFiles = num(v)
		case "nproc":
			got.limits.Processes = num(v)
		case "fsize":
			got.limits.FileSize = num(v) * fileBlock(c.bashPath())
		case "uid":
			got.uid = num(v)
		case "net":
			got.netns = v
		case "mnt":
			got.mntns = v
		case "proc1":
			got.procHidden = v == "hidden"
		case "dir":
			got.dir = v
		case "write":
			got.wrote = v == "ok"
		case "mount":
			if m, ok := parseMountInfo(v); ok {
				got.mounts = append(got.mounts, m)
			}
		}
	}
	for _, k := range []string{"cpu", "as", "nofile", "nproc", "fsize", "uid", "net", "mnt", "proc1", "dir"} {
		if !keys[k] {
			return probed{}, fmt.Errorf("unexpected probe output %q", res.Output)
		}
	}
	return got, nil
}

// bashPath is the shell commands run with.
func (c *Containment) bashPath() string {
	if c == nil || c.bash == "" {
		return "bash"
	}
	return c.bash
}

// describe records each feature with its effective value, read back from
// inside the contained process rather than taken from the request.
func (c *Containment) describe(cfg Config, got, base probed, root bool, unsupported map[string]string) events.Containment {
	feat := func(name, state string, limit uint64, detail string) events.ContainmentFeature {
		return events.ContainmentFeature{Name: name, State: state, Limit: limit, Detail: detail}
	}
	limit := func(name string, asked, effective uint64) events.ContainmentFeature {
		switch {
		case asked == 0:
			return feat(name, events.ContainmentOff, 0, "")
		case unsupported[name] != "":
			// What the command gets instead is the service's own limit,
			// read back from inside like every effective value.
			keeps := "unlimited"
			if effective > 0 {
				keeps = strconv.FormatUint(effective, 10)
			}
			return feat(name, events.ContainmentUnsupported, 0, fmt.Sprintf("setrlimit to %d: %s; commands keep the service's own limit (%s)", asked, unsupported[name], keeps))
		case effective == 0 || effective > asked:
			return feat(name, events.ContainmentUnsupported, 0, fmt.Sprintf("asked %d, the command sees %d", asked, effective))
		}
		return feat(name, events.ContainmentActive, effective, "")
	}
	fs := []events.ContainmentFeature{
		limit(FeatureAddressSpace, cfg.Limits.AddressSpace, got.limits.AddressSpace),
		limit(FeatureCPU, cfg.Limits.CPUSeconds, got.limits.CPUSeconds),
		limit(FeatureFileSize, cfg.Limits.FileSize, got.limits.FileSize),
	}
	switch {
	case !cfg.Network:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentOff, 0, ""))
	case !c.netns:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentUnsupported, 0, "new network namespace: "+unsupported["net"]))
	case got.netns == base.netns:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentUnsupported, 0, "the command still sees the service's own network namespace"))
	default:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentActive, 0, "own network namespace, loopback down"))
	}
	fs = append(fs, limit(FeatureOpenFiles, cfg.Limits.OpenFiles, got.limits.OpenFiles))
	procs := limit(FeatureProcesses, cfg.Limits.Processes, got.limits.Processes)
	if procs.State == events.ContainmentActive && got.uid == 0 {
		procs = feat(FeatureProcesses, events.ContainmentUnsupported, 0, "RLIMIT_NPROC does not bind root, and commands run as root (no unprivileged user)")
	}
	fs = append(fs, procs,
		feat(FeatureEnvironment, events.ContainmentActive, 0, "PATH, HOME, TMPDIR (and TMP, TEMP), LANG, LC_ALL and the case's env only"),
		feat(FeatureSession, events.ContainmentActive, 0, "own session and process group, killed as a whole"))
	switch {
	case !root:
		fs = append(fs, feat(FeatureUser, events.ContainmentActive, 0, fmt.Sprintf("the service's own uid %d (not root)", got.uid)))
	case !cfg.Unprivileged:
		fs = append(fs, feat(FeatureUser, events.ContainmentOff, 0, "commands run as root"))
	case !c.dropUID:
		fs = append(fs, feat(FeatureUser, events.ContainmentUnsupported, 0, "setuid to a fresh uid: "+unsupported["uid"]))
	case got.uid == 0:
		fs = append(fs, feat(FeatureUser, events.ContainmentUnsupported, 0, "the command still runs as root"))
	default:
		fs = append(fs, feat(FeatureUser, events.ContainmentActive, 0, "a fresh uid per attempt; every process of it is killed after each command"))
	}
	fs = append(fs, c.describeMounts(cfg, got, base, unsupported)...)
	fs = append(fs, c.describeOwnUser(cfg, got, root)...)
	slices.SortFunc(fs, func(a, b events.ContainmentFeature) int { return strings.Compare(a.Name, b.Name) })
	return events.Containment{Provider: "process", Features: fs}
}
