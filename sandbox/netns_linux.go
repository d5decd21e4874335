package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// loopbackDown takes the loopback device of the network namespace of
// process pid down, so that a container asked for no network at all
// reaches nothing, not even itself over 127.0.0.1 (engines bring it up).
// It enters the namespace on a thread of its own that never leaves it:
// the thread ends with its goroutine, so no other goroutine runs there.
func loopbackDown(pid int) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: a thread in another namespace must die with the
		// goroutine, not go back to the scheduler.
		runtime.LockOSThread()
		errc <- func() error {
			if err := enterNetNS(pid); err != nil {
				return err
			}
			return setLoopback(false)
		}()
	}()
	return <-errc
}

// enterNetNS moves the calling thread (locked to its goroutine, never to
// be unlocked) into the network namespace of process pid.
func enterNetNS(pid int) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return err
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter the network namespace: %w", err)
	}
	return nil
}

// setLoopback brings the loopback device of the calling thread's network
// namespace up or takes it down.
func setLoopback(up bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	req, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, req); err != nil {
		return fmt.Errorf("read the loopback's flags: %w", err)
	}
	flags := req.Uint16() &^ unix.IFF_UP
	if up {
		flags |= unix.IFF_UP
	}
	req.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, req); err != nil {
		return fmt.Errorf("set the loopback %s: %w", map[bool]string{true: "up", false: "down"}[up], err)
	}
	return nil
}
