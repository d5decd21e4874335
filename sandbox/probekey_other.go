//go:build !linux

package sandbox

import "errors"

// keyFor has no key to give off Linux, where what the probe depends on
// is not read: every Probe runs its commands.
func keyFor(Config, string, string) (probeKey, error) {
	return probeKey{}, errors.New("probe key: only on linux")
}
