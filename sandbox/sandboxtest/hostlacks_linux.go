package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The names of sandbox's features this file knows (sandbox.Feature*: this
// package cannot import sandbox, whose tests use it).
const (
	featureProcesses    = "processes"
	featureAddressSpace = "address_space_bytes"
	featureCPU          = "cpu_seconds"
	featureOpenFiles    = "open_files"
	featureUser         = "unprivileged_user"
	featureNetwork      = "network_isolation"
)

// HostLacks reports whether this host provably cannot give the named
// containment feature (asked: the limit, for a resource limit), and why.
// It asks the kernel directly, not the sandbox's probe: a hard limit below
// the one asked that this process may not raise, a fresh uid the kernel
// refuses to switch to, a network namespace it refuses to make. Anything
// it cannot prove absent it reports as present.
func HostLacks(feature string, asked uint64) (string, bool) {
	root := os.Geteuid() == 0
	switch feature {
	case featureAddressSpace:
		return hardLimitBelow(syscall.RLIMIT_AS, "address space", asked)
	case featureCPU:
		return hardLimitBelow(syscall.RLIMIT_CPU, "CPU time", asked)
	case featureOpenFiles:
		return hardLimitBelow(syscall.RLIMIT_NOFILE, "open files", asked)
	case featureProcesses:
		if root {
			// RLIMIT_NPROC binds no root process: the limit needs a uid
			// of the attempt's own.
			if why, lacks := freshUIDRefused(); lacks {
				return "commands would run as root, whom RLIMIT_NPROC does not bind: " + why, true
			}
		}
		return hardLimitBelow(unix.RLIMIT_NPROC, "processes", asked)
	case featureUser:
		if !root {
			return "", false
		}
		return freshUIDRefused()
	case featureNetwork:
		return netnsRefused(root)
	}
	return "", false
}

// hardLimitBelow reports whether this process's hard limit of resource is
// below asked and it lacks CAP_SYS_RESOURCE to raise it.
func hardLimitBelow(resource int, what string, asked uint64) (string, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(resource, &r); err != nil {
		return "", false
	}
	if r.Max == ^uint64(0) || r.Max >= asked || hasCapability(unix.CAP_SYS_RESOURCE) {
		return "", false
	}
	return fmt.Sprintf("the hard limit of %s is %d, below %d, and this process lacks CAP_SYS_RESOURCE to raise it", what, r.Max, asked), true
}

// hasCapability reports whether this process holds capability bit c
// (its effective set, from /proc/self/status).
func hasCapability(c uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			set, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && set&(1<<c) != 0
		}
	}
	return false
}

// freshUIDRefused starts a process as a uid no one uses, as the sandbox
// does for each attempt, and reports the kernel's refusal.
func freshUIDRefused() (string, bool) {
	const uid = 1_999_999_999
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("the kernel refuses a process as uid %d: %v", uid, err), true
	}
	return "", false
}

// netnsRefused starts a process in a network namespace of its own, as the
// sandbox does (not root: inside a user namespace that maps the uid to
// itself), and reports the kernel's refusal.
func netnsRefused(root bool) (string, bool) {
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if !root {
		uid, gid := os.Getuid(), os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = attr
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("the kernel refuses a new network namespace: %v", err), true
	}
	return "", false
}
