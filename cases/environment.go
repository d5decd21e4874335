package cases

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
)

// Environment is the container image a case's commands run in (the
// runner's run_command and checks, the grader's command instruments), one
// container per attempt, and its limits. A case without one (and whose
// treatment gives none) runs commands as contained host processes. See
// docs/containment.md.
type Environment struct {
	// Image is the image as the author names it (a tag or an ID). It must
	// be in the engine's store where suites are published and where runs
	// and grades run: images are never pulled.
	Image string `json:"image"`
	// ImageDigest is the image Image named when the case was published
	// (the engine's image ID): what runs, and part of the case digest and
	// the agent identity.
	ImageDigest events.Digest `json:"image_digest,omitempty"`
	// Workdir is where the workspace is mounted (default /workspace).
	Workdir string `json:"workdir"`
	// Network is "none" (the default: nothing, not even a loopback) or
	// "loopback" (the container's own loopback only).
	Network string `json:"network"`
	// MemoryBytes is the cgroup memory limit (0: none).
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// MilliCPUs is the CPU quota in thousandths of a CPU (0: none).
	MilliCPUs uint64 `json:"millicpus,omitempty"`
	// Pids bounds the tasks in the container (0: none).
	Pids uint64 `json:"pids,omitempty"`
}

// Environment bounds.
const (
	// MinMemory is the least memory a container may be given: engines
	// refuse to start one with less.
	MinMemory = 6 << 20
	// MaxCPUs bounds cpus.
	MaxCPUs = 1024
	// MaxPids is the kernel's own bound on tasks.
	MaxPids = 1 << 22
	// DefaultWorkdir is where the workspace is mounted by default.
	DefaultWorkdir = "/workspace"
)

// Network settings.
const (
	NetworkNone     = sandbox.NetworkNone
	NetworkLoopback = sandbox.NetworkLoopback
)

// UnmarshalYAML reads an environment from a case or treatment file, so
// that every problem is named by its field and line: a size written
// wrong, a fraction of a pid, a relative workdir.
func (e *Environment) UnmarshalYAML(node ast.Node) error {
	m, ok := node.(*ast.MappingNode)
	if !ok {
		if mv, ok := node.(*ast.MappingValueNode); ok {
			m = &ast.MappingNode{Values: []*ast.MappingValueNode{mv}}
		} else {
			return nodeErr(node, "want a mapping of image, workdir, network, memory, cpus and pids, got %s", gotOf(node, nil))
		}
	}
	out := Environment{}
	for _, kv := range m.Values {
		key := kv.Key.String()
		v := kv.Value
		switch key {
		case "image":
			s, ok := v.(*ast.StringNode)
			if !ok || strings.TrimSpace(s.Value) == "" {
				return nodeErr(v, "want the image's name or ID, got %s", gotOf(v, nil))
			}
			out.Image = s.Value
		case "workdir":
			s, ok := v.(*ast.StringNode)
			if !ok {
				return nodeErr(v, "want an absolute path, got %s", gotOf(v, nil))
			}
			if err := checkWorkdir(s.Value); err != nil {
				return nodeErr(v, "%v", err)
			}
			out.Workdir = s.Value
		case "network":
			s, ok := v.(*ast.StringNode)
			if !ok || (s.Value != NetworkNone && s.Value != NetworkLoopback) {
				return nodeErr(v, "want %q or %q, got %s", NetworkNone, NetworkLoopback, gotOf(v, nil))
			}
			out.Network = s.Value
		case "memory":
			var text string
			switch n := v.(type) {
			case *ast.StringNode:
				text = n.Value
			case *ast.IntegerNode:
				text = n.GetToken().Value
			default:
				return nodeErr(v, "want a size such as 512MiB or 2GiB, got %s", gotOf(v, nil))
			}
			b, err := ParseSize(text)
			if err != nil {
				return nodeErr(v, "%v", err)
			}
			if b < MinMemory {
				return nodeErr(v, "%d bytes is too little (at least %d, 6MiB: engines refuse less)", b, MinMemory)
			}
			out.MemoryBytes = b
		case "cpus":
			var f float64
			switch n := v.(type) {
			case *ast.IntegerNode, *ast.FloatNode:
				var err error
				if f, err = strconv.ParseFloat(n.GetToken().Value, 64); err != nil {
					return nodeErr(v, "want a number of CPUs such as 1 or 0.5, got %s", gotOf(v, nil))
				}
			default:
				return nodeErr(v, "want a number of CPUs such as 1 or 0.5, got %s", gotOf(v, nil))
			}
			milli := math.Round(f * 1000)
			if !(f > 0) || f > MaxCPUs || milli < 1 || math.Abs(milli-f*1000) > 1e-6 {
				return nodeErr(v, "%v: want more than 0 and at most %d CPUs, in thousandths at most", f, MaxCPUs)
			}
			out.MilliCPUs = uint64(milli)
		case "pids":
			n, err := Count(v, 1, MaxPids, ": a container needs at least one task")
			if err != nil {
				return err
			}
			out.Pids = n
		default:
			return nodeErr(kv.Key, "unknown key (want image, workdir, network, memory, cpus or pids)")
		}
	}
	if out.Image == "" {
		return nodeErr(node, "image: required: the image commands run in (built or loaded on the machine; never pulled)")
	}
	*e = out
	return nil
}

// normalise checks an environment (also one read back from a stored
// case) and fills in its defaults.
func (e *Environment) normalise(field string) error {
	if e == nil {
		return nil
	}
	if strings.TrimSpace(e.Image) == "" {
		return fieldErr(field+".image", "required: the image commands run in")
	}
	if e.ImageDigest != "" {
		if err := e.ImageDigest.Validate(field + ".image_digest"); err != nil {
			return fieldErr(field+".image_digest", "%v", err)
		}
	}
	if e.Workdir == "" {
		e.Workdir = DefaultWorkdir
	}
	if err := checkWorkdir(e.Workdir); err != nil {
		return fieldErr(field+".workdir", "%v", err)
	}
	switch e.Network {
	case "":
		e.Network = NetworkNone
	case NetworkNone, NetworkLoopback:
	default:
		return fieldErr(field+".network", "want %q or %q, got %q", NetworkNone, NetworkLoopback, e.Network)
	}
	if e.MemoryBytes != 0 && e.MemoryBytes < MinMemory {
		return fieldErr(field+".memory", "%d bytes is too little (at least %d)", e.MemoryBytes, MinMemory)
	}
	if e.MilliCPUs > MaxCPUs*1000 {
		return fieldErr(field+".cpus", "at most %d", MaxCPUs)
	}
	if e.Pids > MaxPids {
		return fieldErr(field+".pids", "at most %d", MaxPids)
	}
	return nil
}

func checkWorkdir(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("%q: want an absolute, clean path other than /", p)
	}
	return nil
}

// Sandbox is the environment as the sandbox runs it.
func (e *Environment) Sandbox() sandbox.Environment {
	return sandbox.Environment{Image: e.Image, ImageDigest: e.ImageDigest, Workdir: e.Workdir, Network: e.Network,
		Memory: e.MemoryBytes, MilliCPUs: e.MilliCPUs, Pids: e.Pids}
}

// sizeUnits are the units a size may be written in: IEC (powers of 1024)
// and SI (powers of 1000).
var sizeUnits = []struct {
	name string
	mult uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseSize reads a size such as 2GiB, 512MiB, 1.5GB or 1048576 (bytes)
// into bytes.
func ParseSize(s string) (uint64, error) {
	bad := fmt.Errorf("size %q: want a number with a unit such as 512MiB or 2GiB (B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)", s)
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.name) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.name)), u.mult
			break
		}
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		if n > math.MaxUint64/mult {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, bad
	}
	b := f * float64(mult)
	if b >= math.MaxUint64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return uint64(b), nil
}
