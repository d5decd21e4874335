package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

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
	// FileSize is RLIMIT_FSIZE in bytes: the largest file a process may
	// write (a write past it fails with SIGXFSZ, or EFBIG when the signal
	// is ignored). It bounds each file, not their sum. Set in whole KiB.
	FileSize uint64
}

// DefaultLimits are generous enough for builds and test suites and small
// enough that one command cannot take the machine down.
var DefaultLimits = Limits{CPUSeconds: 600, AddressSpace: 8 << 30, OpenFiles: 1024, Processes: 512, FileSize: 1 << 30}

// DefaultTmpSize is the size of each private tmpfs (/tmp, /var/tmp,
// /dev/shm) an attempt gets when Config.TmpSize is zero.
const DefaultTmpSize = 256 << 20

// Config is the containment a service asks for. What the host grants
// is found by Probe.
type Config struct {
	// Limits are the resource limits (zero fields: none of that kind).
	Limits Limits
	// Network asks for commands without network: a fresh network
	// namespace holding only a loopback device that is down.
	Network bool
	// Unprivileged asks, when the service is root, to run each attempt's
	// commands as a user of their own (a uid no one else uses), so that the
	// process limit binds, commands cannot touch what only root may, and
	// everything an attempt started can be found and killed by its uid.
	Unprivileged bool
	// PrivateTmp asks (root only) for a mount and IPC namespace per
	// attempt in which /tmp, /var/tmp and /dev/shm are tmpfs of TmpSize
	// bytes each: the attempt's own, shared by its commands, gone with it.
	PrivateTmp bool
	// TmpSize is the size of each private tmpfs (zero: DefaultTmpSize).
	TmpSize uint64
	// ReadOnlyHost asks (root only), in the attempt's mount namespace, for
	// every mount of the host but /proc, /sys and /dev read-only: a
	// command writes only its workspace, HOME, TMPDIR and private tmpfs.
	ReadOnlyHost bool
	// PrivateProc asks (root only) for a /proc of the attempt's own in its
	// mount namespace that shows a command only its own user's processes
	// (hidepid=invisible), so it cannot read other command lines.
	PrivateProc bool
	// WorkDir is where attempt directories live; the probe runs there.
	WorkDir string
	// Engine is the container engine for attempts whose case names an
	// environment (zero: EngineFromEnv).
	Engine Engine
}

// DefaultConfig asks for every feature at DefaultLimits.
func DefaultConfig(workDir string) Config {
	return Config{Limits: DefaultLimits, Network: true, Unprivileged: true,
		PrivateTmp: true, TmpSize: DefaultTmpSize, ReadOnlyHost: true, PrivateProc: true, WorkDir: workDir}
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
	FeatureFileSize     = "file_size_bytes"
	FeaturePrivateTmp   = "private_tmp"
	FeatureReadOnlyHost = "read_only_host"
	FeaturePrivateProc  = "private_proc"
	FeatureWorkspace    = "private_workspace"
	FeatureLeftovers    = "leftover_files"
)

// Containment is what is in force on this host, as a probe found it.
type Containment struct {
	engine  Engine
	bash    string
	limits  Limits // only the limits that are in force
	dropUID bool   // root: run as a fresh uid per attempt
	netns   bool
	userns  bool // not root: the network namespace needs a user namespace
	// mounts is what each attempt's mount namespace holds (none: the
	// attempt shares the service's).
	mounts nsOptions
	// sweep are the directories searched for what an attempt's uid left
	// (shared places and the work dir), when anything there was writable.
	sweep  []string
	record events.Containment
}

// Record is the containment as facts record it (run.claimed for the
// runner, grade.instrument for the grader's commands).
func (c *Containment) Record() *events.Containment {
	if c == nil {
		return nil
	}
	r := c.record
	r.Features = append([]events.ContainmentFeature(nil), c.record.Features...)
	return &r
}

// Sandbox is one attempt's containment: the host's containment, the uid
// the attempt's commands run as (0: the service's own) and the directories
// handed to that uid before each command.
type Sandbox struct {
	c     *Containment
	uid   uint32
	owned []string
	ctr   *container // nil: commands run as host processes
	// mu guards ns and ran: Run and Close of one attempt.
	mu  sync.Mutex
	ns  *mountNS // the attempt's mount namespace, made at its first command
	ran bool     // a command ran since the last Close
}

// UID is the user the attempt's commands run as (0: the service's own).
func (s *Sandbox) UID() uint32 {
	if s == nil {
		return 0
	}
	return s.uid
}

// ForAttempt returns the sandbox of one attempt. The directories (the
// workspace, HOME, TMPDIR) are handed to the attempt's user before each
// command, so that the command may write what the service wrote there.
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
	return c.wrapWith(bash, command)
}

// wrapWith is wrap with the given shell (a container's).
func (c *Containment) wrapWith(bash, command string) []string {
	if c == nil {
		return []string{bash, "-c", command}
	}
	set := ulimitArgs(c.limits, fileBlock(bash))
	if set == "" {
		return []string{bash, "-c", command}
	}
	return []string{bash, "-c", set + ` && exec "$0" -c "$1"`, bash, command}
}

// fileBlock is the unit of ulimit -f in shell: bash counts KiB, POSIX
// shells (dash, busybox) 512-byte blocks.
func fileBlock(shell string) uint64 {
	if filepath.Base(shell) == "bash" {
		return 1024
	}
	return 512
}

// ulimitArgs renders the limits as one ulimit command of a shell whose
// ulimit -f counts blocks of block bytes (also no core files: a core dump
// in the workspace would count as work).
func ulimitArgs(l Limits, block uint64) string {
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
	if l.FileSize > 0 {
		parts = append(parts, "-f "+strconv.FormatUint(max(l.FileSize/block, 1), 10))
	}
	return strings.Join(parts, " ")
}

// handOver gives the sandbox's user the directories it works in, each
// readable by that user alone (0700): an attempt running beside it, as
// another uid, cannot list or read them. Only what is not its own yet is
// changed, so files the command wrote keep their metadata and the
// workspace rescan stays cheap.
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
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && fi.Mode().Perm() != 0o700 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return fmt.Errorf("close %s to other users: %w", dir, err)
			}
		}
	}
	return nil
}
