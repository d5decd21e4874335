package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// probeScript prints what a contained process sees: its limits, its uid
// and its network namespace.
const probeScript = `ulimit -t; ulimit -v; ulimit -n; ulimit -u; id -u; readlink /proc/self/ns/net`

// probed is what one probe run saw.
type probed struct {
	limits Limits
	uid    uint64
	netns  string
}

// Probe finds out, once at start, which of the asked features
// this host grants, by running a tiny contained command with each feature
// alone and then with all that worked. Each resource limit is a feature of
// its own: a host that refuses one (a hard limit lowered below the asked
// value, which only CAP_SYS_RESOURCE may raise) loses that one, never the
// others. A feature the host refuses, or that would not bind (the process
// limit for root), is recorded as unsupported with the reason; it is never
// claimed.
func Probe(ctx context.Context, cfg Config) (*Containment, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, fmt.Errorf("containment probe: %w", err)
	}
	dir := cfg.WorkDir
	if dir == "" {
		dir = os.TempDir()
	}
	c := &Containment{bash: bash, engine: cfg.Engine}
	base, err := c.probe(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("containment probe: a plain command in its own session fails: %w", err)
	}
	root := os.Geteuid() == 0
	unsupported := map[string]string{}

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
	for _, f := range asked {
		try := &Containment{bash: bash}
		apply(try, f, cfg, root)
		if _, err := try.probe(ctx, dir); err != nil {
			unsupported[f] = err.Error()
			if f == "uid" {
				unsupported[f] += fmt.Sprintf(" (can every user reach the work dir %s?)", dir)
			}
			continue
		}
		apply(c, f, cfg, root)
	}
	got, err := c.probe(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("containment probe: the features that work alone fail together: %w", err)
	}
	c.record = c.describe(cfg, got, base, root, unsupported)
	return c, nil
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
}

// apply turns on, in c, the asked feature f: one resource limit (by its
// feature name), "uid" or "net".
func apply(c *Containment, f string, cfg Config, root bool) {
	switch f {
	case "uid":
		c.dropUID = true
	case "net":
		c.netns, c.userns = true, !root
	default:
		for _, l := range limitFeatures {
			if l.name == f {
				*l.of(&c.limits) = *l.of(&cfg.Limits)
			}
		}
	}
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
		feat(FeatureEnvironment, events.ContainmentActive, 0, "PATH, HOME, TMPDIR, LANG, LC_ALL and the case's env only"),
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
	slices.SortFunc(fs, func(a, b events.ContainmentFeature) int { return strings.Compare(a.Name, b.Name) })
	return events.Containment{Provider: "process", Features: fs}
}
