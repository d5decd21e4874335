package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Self is the calling process as an Owner.
func Self() (Owner, error) { return self() }

var self = sync.OnceValues(func() (Owner, error) { return processOwner(os.Getpid()) })

// bootID is the start of the kernel's boot id: it changes with every boot.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	id := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
	if len(id) < 8 || !bootRe.MatchString(id[:8]) {
		return "", fmt.Errorf("boot id %q", b)
	}
	return id[:8], nil
})

// processOwner reads the Owner of a process of this PID namespace.
func processOwner(pid int) (Owner, error) {
	boot, err := bootID()
	if err != nil {
		return Owner{}, err
	}
	ns, err := pidNamespace("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return Owner{}, err
	}
	start, _, err := startTime(pid)
	if err != nil {
		return Owner{}, err
	}
	return Owner{Boot: boot, PIDNS: ns, PID: pid, Start: start}, nil
}

// pidNamespace is the inode of the PID namespace a link names
// ("pid:[4026531836]").
func pidNamespace(link string) (uint64, error) {
	l, err := os.Readlink(link)
	if err != nil {
		return 0, fmt.Errorf("pid namespace: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pid namespace %q: %w", l, err)
	}
	return n, nil
}

// startTime is when process pid started (clock ticks since boot) and
// whether it is a zombie (dead, not yet reaped).
func startTime(pid int) (uint64, bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'. State is field 3, starttime field 22.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("stat of %d: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, false, fmt.Errorf("stat of %d: %q", pid, s)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("stat of %d: %w", pid, err)
	}
	return start, f[0] == "Z" || f[0] == "X", nil
}

// liveness tells whether the owner still runs: a process of another boot
// is dead; one of our PID namespace is alive exactly when a process of
// its PID has its start time and is no zombie; one of another namespace
// cannot be told.
func (o Owner) liveness() liveness {
	me, err := Self()
	if err != nil {
		return ownerUnknown
	}
	if o.Boot != me.Boot {
		return ownerDead
	}
	if o.PIDNS != me.PIDNS {
		return ownerUnknown
	}
	start, zombie, err := startTime(o.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ownerDead
	case err != nil:
		return ownerUnknown
	case start != o.Start || zombie:
		return ownerDead
	}
	return ownerAlive
}
