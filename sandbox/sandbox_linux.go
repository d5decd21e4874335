package sandbox

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr is how a contained command is started: its own session (and
// so its own process group), and as far as the host allows its own user
// and network namespace (unless hostNet keeps the host's network).
func (s *Sandbox) sysProcAttr(hostNet bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true}
	if s == nil || s.c == nil {
		return attr
	}
	if s.uid != 0 {
		// No supplementary groups: root's stay behind.
		attr.Credential = &syscall.Credential{Uid: s.uid, Gid: s.uid}
	}
	if s.c.netns && !hostNet {
		attr.Cloneflags |= syscall.CLONE_NEWNET
		if s.c.userns {
			// Not root: a user namespace in which the service's uid maps to
			// itself grants the right to make the network namespace.
			uid, gid := os.Getuid(), os.Getgid()
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		}
	}
	return attr
}

// killAll kills every process of the sandbox's user, also those that left
// the command's session. It reports whether none is left.
func (s *Sandbox) killAll() bool {
	if s == nil || s.uid == 0 {
		return true
	}
	killUID(s.uid)
	return len(processesOf(s.uid)) == 0
}

// killUID kills every process of uid. It repeats until none is left
// alive, since a process may fork while the others are being killed; the
// process limit bounds how many there can be. Zombies are skipped: they
// are dead and their parent (or init) reaps them. It returns how many
// processes it signalled.
func killUID(uid uint32) int {
	n := 0
	for range 200 {
		pids := processesOf(uid)
		if len(pids) == 0 {
			return n
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

// signalAll sends SIGKILL once to every process of the sandbox's user.
func (s *Sandbox) signalAll() {
	if s == nil || s.uid == 0 {
		return
	}
	for _, pid := range processesOf(s.uid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesOf lists the live processes whose real or effective uid is uid.
func processesOf(uid uint32) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := strconv.FormatUint(uint64(uid), 10)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var state, uids []string
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "State:"):
				state = strings.Fields(line[len("State:"):])
			case strings.HasPrefix(line, "Uid:"):
				uids = strings.Fields(line[len("Uid:"):])
			}
		}
		if len(state) > 0 && (state[0] == "Z" || state[0] == "X") {
			continue
		}
		if len(uids) >= 2 && (uids[0] == want || uids[1] == want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// owner returns the uid owning path and its number of hard links (not
// following a symlink).
func owner(path string) (uint32, uint64) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, 0
	}
	return st.Uid, uint64(st.Nlink)
}
