package sandbox

import (
	"os"
	"syscall"
)

// dropResourceCapability takes CAP_SYS_RESOURCE out of the bounding set,
// so that the commands this process starts (bash among them) cannot raise
// a hard limit again even as root, as in a container that does not grant
// it. An ordinary user cannot raise one anyway.
func dropResourceCapability() error {
	if os.Geteuid() != 0 {
		return nil
	}
	const prCapbsetDrop, capSysResource = 24, 24
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, capSysResource, 0); errno != 0 {
		return errno
	}
	return nil
}
