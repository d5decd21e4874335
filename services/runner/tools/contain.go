package tools

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// Limits are the resource limits a contained command and each of its
// processes run under (setrlimit: soft and hard alike, so a command cannot
// raise them again). Zero means no limit of that kind.
type Limits struct {
	// CPUSeconds is RLIMIT_CPU: CPU time per process.
	CPUSeconds uint64
	// AddressSpace is RLIMIT_AS in bytes: virtual memory per process.
	AddressSpace uint64
	// OpenFiles is RLIMIT_NOFILE: open descriptors per process.
	OpenFiles uint64
	// Processes is RLIMIT_NPROC: processes (and threads) of the user the
	// command runs as. The kernel does not apply it to root.
	Processes uint64
}

// DefaultLimits are generous enough for builds and test suites and small
// enough that one command cannot take the machine down.
var DefaultLimits = Limits{CPUSeconds: 600, AddressSpace: 8 << 30, OpenFiles: 1024, Processes: 512}

// ContainmentConfig is the containment a runner asks for. What the host
// grants is found by ProbeContainment.
type ContainmentConfig struct {
	// Limits are the resource limits (zero fields: none of that kind).
	Limits Limits
	// Network asks for commands without network: a fresh network
	// namespace holding only a loopback device that is down.
	Network bool
	// Unprivileged asks, when the runner is root, to run each attempt's
	// commands as a user of their own (a uid no one else uses), so that the
	// process limit binds, commands cannot touch what only root may, and
	// everything an attempt started can be found and killed by its uid.
	Unprivileged bool
	// WorkDir is where attempt directories live; the probe runs there.
	WorkDir string
}

// DefaultContainment asks for every feature at DefaultLimits.
func DefaultContainment(workDir string) ContainmentConfig {
	return ContainmentConfig{Limits: DefaultLimits, Network: true, Unprivileged: true, WorkDir: workDir}
}

// Feature names recorded in run.claimed; limits are in the unit the name
// says.
const (
	FeatureSession      = "session"
	FeatureEnvironment  = "scrubbed_environment"
	FeatureCPU          = "cpu_seconds"
	FeatureAddressSpace = "address_space_bytes"
	FeatureOpenFiles    = "open_files"
	FeatureProcesses    = "processes"
	FeatureUser         = "unprivileged_user"
	FeatureNetwork      = "network_isolation"
)

// Containment is what is in force on this host, as a probe found it.
type Containment struct {
	bash    string
	limits  Limits // only the limits that are in force
	dropUID bool   // root: run as a fresh uid per attempt
	netns   bool
	userns  bool // not root: the network namespace needs a user namespace
	record  events.Containment
}

// Record is the containment as run.claimed records it.
func (c *Containment) Record() *events.Containment {
	if c == nil {
		return nil
	}
	r := c.record
	r.Features = append([]events.ContainmentFeature(nil), c.record.Features...)
	return &r
}

// Sandbox is one attempt's containment: the host's containment, the uid
// the attempt's commands run as (0: the runner's own) and the directories
// handed to that uid before each command.
type Sandbox struct {
	c     *Containment
	uid   uint32
	owned []string
}

// UID is the user the attempt's commands run as (0: the runner's own).
func (s *Sandbox) UID() uint32 {
	if s == nil {
		return 0
	}
	return s.uid
}

// ForAttempt returns the sandbox of one attempt. The directories (the
// workspace, HOME, TMPDIR) are handed to the attempt's user before each
// command, so that the command may write what the runner wrote.
func (c *Containment) ForAttempt(dirs ...string) *Sandbox {
	if c == nil {
		return nil
	}
	s := &Sandbox{c: c, owned: dirs}
	if c.dropUID {
		s.uid = freshUID()
	}
	return s
}

// freshUID picks a uid from a range no distribution assigns, so that the
// process limit counts this attempt's processes only and cleanup by uid
// kills nothing else.
func freshUID() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return 1_000_000_000 + binary.LittleEndian.Uint32(b[:])%1_000_000_000
}

// wrap returns the argv that runs command under the limits: a bash that
// sets them on itself and then execs the command's bash, which inherits
// them. The command is passed as an argument, never spliced into the
// script, so no quoting can break out.
func (c *Containment) wrap(command string) []string {
	bash := "bash"
	if c != nil && c.bash != "" {
		bash = c.bash
	}
	if c == nil {
		return []string{bash, "-c", command}
	}
	set := ulimitArgs(c.limits)
	if set == "" {
		return []string{bash, "-c", command}
	}
	return []string{bash, "-c", set + ` && exec "$0" -c "$1"`, bash, command}
}

// ulimitArgs renders the limits as one bash ulimit command (also no core
// files: a core dump in the workspace would count as work).
func ulimitArgs(l Limits) string {
	parts := []string{"ulimit -c 0"}
	if l.CPUSeconds > 0 {
		parts = append(parts, "-t "+strconv.FormatUint(l.CPUSeconds, 10))
	}
	if l.AddressSpace > 0 {
		parts = append(parts, "-v "+strconv.FormatUint(max(l.AddressSpace/1024, 1), 10))
	}
	if l.OpenFiles > 0 {
		parts = append(parts, "-n "+strconv.FormatUint(l.OpenFiles, 10))
	}
	if l.Processes > 0 {
		parts = append(parts, "-u "+strconv.FormatUint(l.Processes, 10))
	}
	return strings.Join(parts, " ")
}

// handOver gives the sandbox's user the directories it works in. Only what
// is not its own yet is changed, so files the command wrote keep their
// metadata and the workspace rescan stays cheap.
func (s *Sandbox) handOver() error {
	if s == nil || s.uid == 0 {
		return nil
	}
	for _, dir := range s.owned {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			uid, links := owner(p)
			if uid == s.uid {
				return nil
			}
			if !d.IsDir() && links > 1 {
				// A hard link may be a name for a file outside the
				// workspace (a host without protected_hardlinks lets a user
				// link to what it does not own): never hand that over.
				return nil
			}
			return os.Lchown(p, int(s.uid), int(s.uid))
		})
		if err != nil {
			return fmt.Errorf("hand %s to uid %d: %w", dir, s.uid, err)
		}
	}
	return nil
}

// probeScript prints what a contained process sees: its limits, its uid
// and its network namespace.
const probeScript = `ulimit -t; ulimit -v; ulimit -n; ulimit -u; id -u; readlink /proc/self/ns/net`

// probed is what one probe run saw.
type probed struct {
	limits Limits
	uid    uint64
	netns  string
}

// ProbeContainment finds out, once at start, which of the asked features
// this host grants, by running a tiny contained command with each feature
// alone and then with all that worked. A feature the host refuses, or
// that would not bind (the process limit for root), is recorded as
// unsupported with the reason; it is never claimed.
func ProbeContainment(ctx context.Context, cfg ContainmentConfig) (*Containment, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, fmt.Errorf("containment probe: %w", err)
	}
	dir := cfg.WorkDir
	if dir == "" {
		dir = os.TempDir()
	}
	c := &Containment{bash: bash}
	base, err := c.probe(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("containment probe: a plain command in its own session fails: %w", err)
	}
	root := os.Geteuid() == 0
	unsupported := map[string]string{}

	var asked []string
	if cfg.Limits != (Limits{}) {
		asked = append(asked, "limits")
	}
	if cfg.Unprivileged && root {
		asked = append(asked, "uid")
	}
	if cfg.Network {
		asked = append(asked, "net")
	}
	for _, f := range asked {
		try := &Containment{bash: bash}
		switch f {
		case "limits":
			try.limits = cfg.Limits
		case "uid":
			try.dropUID = true
		case "net":
			try.netns, try.userns = true, !root
		}
		if _, err := try.probe(ctx, dir); err != nil {
			unsupported[f] = err.Error()
			if f == "uid" {
				unsupported[f] += fmt.Sprintf(" (can every user reach the work dir %s?)", dir)
			}
			continue
		}
		switch f {
		case "limits":
			c.limits = cfg.Limits
		case "uid":
			c.dropUID = true
		case "net":
			c.netns, c.userns = true, !root
		}
	}
	got, err := c.probe(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("containment probe: the features that work alone fail together: %w", err)
	}
	c.record = c.describe(cfg, got, base, root, unsupported)
	return c, nil
}

// probe runs probeScript contained as c says and reads what it saw.
func (c *Containment) probe(ctx context.Context, dir string) (probed, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	sb := c.ForAttempt()
	argv := c.wrap(probeScript)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = sb.sysProcAttr()
	out, err := cmd.CombinedOutput()
	sb.killAll()
	if err != nil {
		return probed{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	lines := strings.Fields(string(out))
	if len(lines) != 6 {
		return probed{}, fmt.Errorf("unexpected probe output %q", out)
	}
	num := func(s string) uint64 {
		if s == "unlimited" {
			return 0
		}
		n, _ := strconv.ParseUint(s, 10, 64)
		return n
	}
	return probed{
		limits: Limits{CPUSeconds: num(lines[0]), AddressSpace: num(lines[1]) * 1024, OpenFiles: num(lines[2]), Processes: num(lines[3])},
		uid:    num(lines[4]),
		netns:  lines[5],
	}, nil
}

// describe records each feature with its effective value, read back from
// inside the contained process rather than taken from the request.
func (c *Containment) describe(cfg ContainmentConfig, got, base probed, root bool, unsupported map[string]string) events.Containment {
	feat := func(name, state string, limit uint64, detail string) events.ContainmentFeature {
		return events.ContainmentFeature{Name: name, State: state, Limit: limit, Detail: detail}
	}
	limit := func(name string, asked, effective uint64) events.ContainmentFeature {
		switch {
		case asked == 0:
			return feat(name, events.ContainmentOff, 0, "")
		case unsupported["limits"] != "":
			return feat(name, events.ContainmentUnsupported, 0, "setrlimit: "+unsupported["limits"])
		case effective == 0 || effective > asked:
			return feat(name, events.ContainmentUnsupported, 0, fmt.Sprintf("asked %d, the command sees %d", asked, effective))
		}
		return feat(name, events.ContainmentActive, effective, "")
	}
	fs := []events.ContainmentFeature{
		limit(FeatureAddressSpace, cfg.Limits.AddressSpace, got.limits.AddressSpace),
		limit(FeatureCPU, cfg.Limits.CPUSeconds, got.limits.CPUSeconds),
	}
	switch {
	case !cfg.Network:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentOff, 0, ""))
	case !c.netns:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentUnsupported, 0, "new network namespace: "+unsupported["net"]))
	case got.netns == base.netns:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentUnsupported, 0, "the command still sees the runner's network namespace"))
	default:
		fs = append(fs, feat(FeatureNetwork, events.ContainmentActive, 0, "own network namespace, loopback down"))
	}
	fs = append(fs, limit(FeatureOpenFiles, cfg.Limits.OpenFiles, got.limits.OpenFiles))
	procs := limit(FeatureProcesses, cfg.Limits.Processes, got.limits.Processes)
	if procs.State == events.ContainmentActive && got.uid == 0 {
		procs = feat(FeatureProcesses, events.ContainmentUnsupported, 0, "RLIMIT_NPROC does not bind root, and commands run as root (no unprivileged user)")
	}
	fs = append(fs, procs,
		feat(FeatureEnvironment, events.ContainmentActive, 0, "PATH, HOME, TMPDIR, LANG, LC_ALL and the case's env only"),
		feat(FeatureSession, events.ContainmentActive, 0, "own session and process group, killed as a whole"))
	switch {
	case !root:
		fs = append(fs, feat(FeatureUser, events.ContainmentActive, 0, fmt.Sprintf("the runner's own uid %d (not root)", got.uid)))
	case !cfg.Unprivileged:
		fs = append(fs, feat(FeatureUser, events.ContainmentOff, 0, "commands run as root"))
	case !c.dropUID:
		fs = append(fs, feat(FeatureUser, events.ContainmentUnsupported, 0, "setuid to a fresh uid: "+unsupported["uid"]))
	case got.uid == 0:
		fs = append(fs, feat(FeatureUser, events.ContainmentUnsupported, 0, "the command still runs as root"))
	default:
		fs = append(fs, feat(FeatureUser, events.ContainmentActive, 0, "a fresh uid per attempt; every process of it is killed after each command"))
	}
	slices.SortFunc(fs, func(a, b events.ContainmentFeature) int { return strings.Compare(a.Name, b.Name) })
	return events.Containment{Provider: "process", Features: fs}
}
