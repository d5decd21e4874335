package bus

import "time"

// SetCreateTimeout shortens how long Open waits for a create the server may
// have refused; the returned function restores it.
func SetCreateTimeout(d time.Duration) (restore func()) {
	old := createTimeout
	createTimeout = d
	return func() { createTimeout = old }
}
