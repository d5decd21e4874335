package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// Network settings of an Environment.
const (
	// NetworkNone: the container's own network namespace with its
	// loopback down: a command reaches nothing, not even itself.
	NetworkNone = "none"
	// NetworkLoopback: the container's own loopback is up, so processes
	// in the container may talk to each other (a database its tests
	// start); nothing outside the container is reachable.
	NetworkLoopback = "loopback"
)

// Paths inside a container: HOME and TMPDIR are the attempt's own
// directories, mounted outside the workspace so caches never count as
// work.
const (
	ContainerHome = "/factline/home"
	ContainerTmp  = "/factline/tmp"
)

// Environment is the container image and the limits commands run under
// (a case's environment): one container per attempt.
type Environment struct {
	// Image is the reference the case names (for the record).
	Image string
	// ImageDigest is the image that runs: the engine's image ID, resolved
	// when the suite was published. Empty: Image is resolved now.
	ImageDigest events.Digest
	// Workdir is where the workspace is mounted (default /workspace).
	Workdir string
	// Network is NetworkNone (the default) or NetworkLoopback.
	Network string
	// Memory is the cgroup memory limit in bytes (swap included); 0: none.
	Memory uint64
	// MilliCPUs is the CPU quota in thousandths of a CPU; 0: none.
	MilliCPUs uint64
	// Pids is the cgroup limit of tasks in the container; 0: none.
	Pids uint64
}

// ContainerSpec is one attempt's container.
type ContainerSpec struct {
	// Name is the container's name, derived from the run and the lease so
	// that a takeover finds it.
	Name string
	// Labels mark the container (LabelSuite, LabelRun, LabelLease);
	// LabelOwner, the service's own process, is added to them.
	Labels map[string]string
	// Env is the image and the limits.
	Env Environment
	// Workspace is the host directory mounted read-write at Env.Workdir;
	// Home and Tmp are mounted at ContainerHome and ContainerTmp.
	Workspace, Home, Tmp string
}

// container is the container of one attempt's sandbox.
type container struct {
	engine Engine
	name   string
	shell  string // the image's bash, else /bin/sh
	// dir is the host directory holding the attempt's (removed with it):
	// the engine's client runs there, since conmon writes an "oom" marker
	// into its working directory when a command is killed for memory.
	dir     string
	ws      string // the host workspace ...
	workdir string // ... and where it is in the container
	network string
	record  events.Containment
	closed  bool // removed: Close again does nothing
}

// ContainerName is the name of a run's container for one lease: a
// takeover (the next lease) finds and removes those of earlier leases by
// the run's labels. Suite and run are subject tokens, which hold no dot.
func ContainerName(suite, run string, lease uint32) string {
	n := fmt.Sprintf("factline.%s.%s.%d", suite, run, lease)
	if len(n) > 200 {
		n = "factline." + events.DigestOf([]byte(n)).Hex()[:32] + "." + strconv.FormatUint(uint64(lease), 10)
	}
	return n
}

// Container starts the container of one attempt and returns its sandbox:
// commands run in it by exec, as the attempt's own uid (when the service
// is root), under the same rlimits, output caps, timeouts and kills as the
// process provider, and the container's cgroup limits. The image must be
// in the engine's store (it is never pulled). The container's record is
// read back from inside it (Sandbox.Record). Close removes it.
func (c *Containment) Container(ctx context.Context, spec ContainerSpec) (*Sandbox, error) {
	if c == nil {
		return nil, errors.New("container: no containment probed")
	}
	env := spec.Env
	if env.Workdir == "" {
		env.Workdir = "/workspace"
	}
	if env.Network == "" {
		env.Network = NetworkNone
	}
	if env.Network != NetworkNone && env.Network != NetworkLoopback {
		return nil, fmt.Errorf("container: network %q: want %q or %q", env.Network, NetworkNone, NetworkLoopback)
	}
	e := c.engine.orDefault()
	ref := env.Image
	if env.ImageDigest != "" {
		ref = env.ImageDigest.Hex()
	}
	digest, err := e.ResolveImage(ctx, ref)
	if err != nil {
		if env.ImageDigest != "" {
			return nil, &ImageError{Image: env.Image + "@" + string(env.ImageDigest), Engine: e.String(), Err: err}
		}
		return nil, err
	}
	if env.ImageDigest != "" && digest != env.ImageDigest {
		return nil, &ImageError{Image: env.Image, Engine: e.String(), Err: fmt.Errorf("resolved to %s, not %s", digest, env.ImageDigest)}
	}
	sb := c.ForAttempt(spec.Workspace, spec.Home, spec.Tmp)
	ctr := &container{engine: e, name: spec.Name, dir: filepath.Dir(spec.Workspace), ws: spec.Workspace, workdir: env.Workdir, network: env.Network}
	sb.ctr = ctr
	// A container of this very name is left from an earlier try of this
	// lease (a claim that failed after it was made): it goes.
	if err := e.remove(ctx, spec.Name); err != nil {
		return nil, err
	}
	args := []string{"create", "--name", spec.Name, "--init", "--stop-timeout", "1",
		"--network", "none", "--workdir", env.Workdir,
		"--volume", spec.Workspace + ":" + env.Workdir,
		"--volume", spec.Home + ":" + ContainerHome,
		"--volume", spec.Tmp + ":" + ContainerTmp,
		"--entrypoint", "sleep"}
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	// The service's own process: when it dies, whoever reaps its site
	// finds its containers by this (Reap).
	if me, err := Self(); err == nil {
		labels[LabelOwner] = me.String()
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	// The engine's default rlimits may exceed the service's own hard
	// limits, which only CAP_SYS_RESOURCE may raise: give the two it sets
	// the asked values (the wrapper sets every limit again per command).
	if n := c.limits.OpenFiles; n > 0 {
		args = append(args, "--ulimit", fmt.Sprintf("nofile=%d:%d", n, n))
	}
	if n := c.limits.Processes; n > 0 {
		args = append(args, "--ulimit", fmt.Sprintf("nproc=%d:%d", n, n))
	}
	if env.Memory > 0 {
		m := strconv.FormatUint(env.Memory, 10)
		args = append(args, "--memory", m, "--memory-swap", m)
	}
	if env.MilliCPUs > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(float64(env.MilliCPUs)/1000, 'f', -1, 64))
	}
	pids := "-1"
	if env.Pids > 0 {
		pids = strconv.FormatUint(env.Pids, 10)
	}
	args = append(args, "--pids-limit", pids)
	if e.Runtime != "" && !e.podman() {
		args = append(args, "--runtime", e.Runtime)
	}
	args = append(args, digest.Hex(), "2147483647")
	if _, err := e.outputIn(ctx, ctr.dir, args...); err != nil {
		return nil, fmt.Errorf("container: %w", err)
	}
	if err := ctr.start(ctx); err != nil {
		_ = sb.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	got, err := ctr.probe(ctx, c, sb.uid)
	if err != nil {
		_ = sb.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	ctr.record = c.describeContainer(env, digest, got, sb.uid)
	return sb, nil
}

// start starts the container and, for no network at all, takes its
// loopback down (engines bring it up).
func (ctr *container) start(ctx context.Context) error {
	// The container's conmon keeps the working directory it is started
	// in, and writes an "oom" marker there when the cgroup runs out of
	// memory: the attempt's directory, never the service's.
	if _, err := ctr.engine.outputIn(ctx, ctr.dir, "start", ctr.name); err != nil {
		return fmt.Errorf("container: %w", err)
	}
	if ctr.network != NetworkNone {
		return nil
	}
	pid, err := ctr.pid(ctx)
	if err != nil {
		return err
	}
	if err := loopbackDown(pid); err != nil {
		return fmt.Errorf("container %s: %w", ctr.name, err)
	}
	return nil
}

// pid is the host's ID of the container's first process, whose network
// namespace is the container's.
func (ctr *container) pid(ctx context.Context) (int, error) {
	out, err := ctr.engine.output(ctx, "inspect", "--format", "{{.State.Pid}}", ctr.name)
	if err != nil {
		return 0, fmt.Errorf("container: %w", err)
	}
	pid, err := strconv.Atoi(out)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("container %s: the engine names no process (%q)", ctr.name, out)
	}
	return pid, nil
}

// closeContainer removes the attempt's container, with everything still
// running in it; once it did, it does nothing.
func (s *Sandbox) closeContainer(ctx context.Context) error {
	if s.ctr.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s.killAll()
	if err := s.ctr.engine.remove(ctx, s.ctr.name); err != nil {
		return err
	}
	s.ctr.closed = true
	return nil
}

// Record is the containment of this sandbox's commands as facts record
// it: the container's, read back from inside it, or the host's.
func (s *Sandbox) Record() *events.Containment {
	if s == nil {
		return nil
	}
	if s.ctr != nil {
		r := s.ctr.record
		r.Features = slices.Clone(r.Features)
		if r.Image != nil {
			img := *r.Image
			r.Image = &img
		}
		return &r
	}
	return s.c.Record()
}

// ContainerWorkdir is where a command in the sandbox's container sees
// the workspace; "" when its commands run on the host.
func (s *Sandbox) ContainerWorkdir() string {
	if s == nil || s.ctr == nil {
		return ""
	}
	return s.ctr.workdir
}

// Container reports whether the sandbox runs commands in a container.
func (s *Sandbox) Container() bool { return s != nil && s.ctr != nil }

// containerProbe prints, one key=value a line, what a command in the
// container sees: its shell, limits, uid, cgroup limits (v1 or v2) and
// network devices that are up.
const containerProbe = `echo shell=$(command -v bash || echo /bin/sh)
echo cpu=$(ulimit -t); echo as=$(ulimit -v); echo nofile=$(ulimit -n); echo nproc=$(ulimit -u); echo fsize=$(ulimit -f)
echo uid=$(id -u)
for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do [ -r $f ] && echo mem=$(cat $f) && break; done
for f in /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max; do [ -r $f ] && echo pids=$(cat $f) && break; done
if [ -r /sys/fs/cgroup/cpu.max ]; then echo cpu.max=$(cat /sys/fs/cgroup/cpu.max)
elif [ -r /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then echo cpu.max=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us); fi
for d in /sys/class/net/*; do echo net=$(basename $d):$(cat $d/operstate):$(cat $d/flags); done
`

// containerSeen is what the probe in a container saw.
type containerSeen struct {
	shell     string
	limits    Limits
	uid       uint64
	memory    uint64 // 0: none
	milliCPUs uint64 // 0: none
	pids      uint64 // 0: none
	up        []string
}

// probe runs containerProbe in the container, as the attempt's commands
// will run, and reads what it saw.
func (ctr *container) probe(ctx context.Context, c *Containment, uid uint32) (containerSeen, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := ctr.execArgs(uid, ctr.workdir, nil)
	args = append(args, "/bin/sh")
	args = append(args, c.wrapWith("/bin/sh", containerProbe)[1:]...)
	out, err := ctr.engine.outputIn(ctx, ctr.dir, args...)
	if err != nil {
		return containerSeen{}, fmt.Errorf("container %s: probe: %w", ctr.name, err)
	}
	var got containerSeen
	num := func(s string) uint64 {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0 // "unlimited", "max", -1
		}
		return n
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "shell":
			got.shell = v
		case "cpu":
			got.limits.CPUSeconds = num(v)
		case "as":
			got.limits.AddressSpace = num(v) * 1024
		case "nofile":
			got.limits.OpenFiles = num(v)
		case "nproc":
			got.limits.Processes = num(v)
		case "fsize":
			// Read by /bin/sh, whose blocks are 512 bytes (as set).
			got.limits.FileSize = num(v) * fileBlock("/bin/sh")
		case "uid":
			got.uid = num(v)
		case "mem":
			// cgroup v1 says "no limit" with a huge page-rounded number.
			if m := num(v); m > 0 && m < 1<<62 {
				got.memory = m
			}
		case "pids":
			got.pids = num(v)
		case "cpu.max":
			f := strings.Fields(v)
			if len(f) == 2 {
				if q, p := num(f[0]), num(f[1]); q > 0 && p > 0 {
					got.milliCPUs = q * 1000 / p
				}
			}
		case "net":
			parts := strings.Split(v, ":")
			if len(parts) == 3 {
				flags, _ := strconv.ParseUint(strings.TrimPrefix(parts[2], "0x"), 16, 64)
				if flags&1 != 0 { // IFF_UP
					got.up = append(got.up, parts[0])
				}
			}
		}
	}
	if got.shell == "" {
		return got, fmt.Errorf("container %s: probe: unexpected output %q", ctr.name, out)
	}
	ctr.shell = got.shell
	return got, nil
}

// Container feature names, beside the process provider's.
const (
	FeatureImage     = "image_filesystem"
	FeatureMemory    = "memory_bytes"
	FeatureCPUQuota  = "cpu_millis"
	FeaturePids      = "pids"
	FeatureContainer = "container"
)

// describeContainer records the container's containment from what a
// command inside it read back, never from what was asked.
func (c *Containment) describeContainer(env Environment, digest events.Digest, got containerSeen, uid uint32) events.Containment {
	feat := func(name, state string, limit uint64, detail string) events.ContainmentFeature {
		return events.ContainmentFeature{Name: name, State: state, Limit: limit, Detail: detail}
	}
	// cgroup limits: the kernel may round (memory to pages), so a limit
	// read back at most the asked one is in force.
	cgroup := func(name string, asked, seen uint64) events.ContainmentFeature {
		switch {
		case asked == 0:
			return feat(name, events.ContainmentOff, 0, "")
		case seen == 0 || seen > asked:
			return feat(name, events.ContainmentUnsupported, 0, fmt.Sprintf("asked %d, the container's cgroup says %d", asked, seen))
		}
		return feat(name, events.ContainmentActive, seen, "")
	}
	limit := func(name string, asked, seen uint64) events.ContainmentFeature {
		switch {
		case asked == 0:
			return feat(name, events.ContainmentOff, 0, "")
		case seen == 0 || seen > asked:
			return feat(name, events.ContainmentUnsupported, 0, fmt.Sprintf("asked %d, a command in the container sees %d", asked, seen))
		}
		return feat(name, events.ContainmentActive, seen, "")
	}
	// The limits the host probe found in force are the ones asked here.
	l := c.limits
	fs := []events.ContainmentFeature{
		limit(FeatureAddressSpace, l.AddressSpace, got.limits.AddressSpace),
		limit(FeatureCPU, l.CPUSeconds, got.limits.CPUSeconds),
		limit(FeatureOpenFiles, l.OpenFiles, got.limits.OpenFiles),
		limit(FeatureFileSize, l.FileSize, got.limits.FileSize),
		cgroup(FeatureMemory, env.Memory, got.memory),
		cgroup(FeatureCPUQuota, env.MilliCPUs, got.milliCPUs),
		cgroup(FeaturePids, env.Pids, got.pids),
		feat(FeatureContainer, events.ContainmentActive, 0, fmt.Sprintf("%s container %s; commands run with %s", c.engine.orDefault(), "per attempt", got.shell)),
		feat(FeatureImage, events.ContainmentActive, 0, fmt.Sprintf("the image's file system; the workspace is mounted at %s", env.Workdir)),
		feat(FeatureEnvironment, events.ContainmentActive, 0, "the image's PATH; HOME, TMPDIR (and TMP, TEMP), LANG, LC_ALL and the case's env only"),
	}
	procs := limit(FeatureProcesses, l.Processes, got.limits.Processes)
	if procs.State == events.ContainmentActive && got.uid == 0 {
		procs = feat(FeatureProcesses, events.ContainmentUnsupported, 0, "RLIMIT_NPROC does not bind root, and commands run as root in the container")
	}
	fs = append(fs, procs)
	switch {
	case len(got.up) > 0 && env.Network == NetworkNone:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentUnsupported, 0, "devices up in the container: "+strings.Join(got.up, ", ")))
	case env.Network == NetworkNone:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentActive, 0, "own network namespace, loopback down"))
	case slices.Equal(got.up, []string{"lo"}) || len(got.up) == 0:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentActive, 0, "own network namespace, only its own loopback up"))
	default:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentUnsupported, 0, "devices up in the container: "+strings.Join(got.up, ", ")))
	}
	if uid != 0 && got.uid == uint64(uid) {
		fs = append(fs, feat(FeatureUser, events.ContainmentActive, 0, "a fresh uid per attempt; every process of it is killed after each command"),
			feat(FeatureSession, events.ContainmentActive, 0, "every process of the attempt's uid in the container is killed after each command"))
	} else {
		fs = append(fs, feat(FeatureUser, events.ContainmentUnsupported, 0, fmt.Sprintf("commands run as uid %d in the container", got.uid)),
			feat(FeatureSession, events.ContainmentActive, 0, "the container is restarted after each command, killing everything it ran"))
	}
	slices.SortFunc(fs, func(a, b events.ContainmentFeature) int { return strings.Compare(a.Name, b.Name) })
	return events.Containment{Provider: "container", Features: fs,
		Image: &events.ContainerImage{Ref: env.Image, Digest: digest}}
}

// execArgs is the engine command line that runs a command in the
// container as uid (0: the image's user) in dir, with env added to the
// image's.
func (ctr *container) execArgs(uid uint32, dir string, env []string) []string {
	args := []string{"exec", "--workdir", dir}
	if uid != 0 {
		u := strconv.FormatUint(uint64(uid), 10)
		args = append(args, "--user", u+":"+u)
	}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	return append(args, ctr.name)
}

// containerDir maps a host directory of the workspace to its place in the
// container; anything else is the workspace's root.
func (ctr *container) containerDir(dir string) string {
	rel, err := filepath.Rel(ctr.ws, dir)
	if dir == "" || err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ctr.workdir
	}
	return filepath.Join(ctr.workdir, rel)
}

// containerEnv is a command's environment in the container: the caller's,
// but PATH is the image's (the host's means nothing there) and HOME and
// TMPDIR (and TMP, TEMP) are the attempt's directories as mounted.
func containerEnv(env []string) []string {
	out := []string{"HOME=" + ContainerHome, "TMPDIR=" + ContainerTmp, "TMP=" + ContainerTmp, "TEMP=" + ContainerTmp}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "TMP", "TEMP":
		default:
			out = append(out, kv)
		}
	}
	return out
}

// RemoveContainers removes the containers carrying all of the labels with
// the engine this containment was configured with (Engine.RemoveContainers).
func (c *Containment) RemoveContainers(ctx context.Context, labels map[string]string) ([]string, error) {
	var e Engine
	if c != nil {
		e = c.engine
	}
	return e.RemoveContainers(ctx, labels)
}
