//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// dropResourceCapability: capabilities are a Linux feature; an ordinary
// user cannot raise a hard limit anyway.
func dropResourceCapability() error {
	if os.Geteuid() == 0 {
		return errors.New("root can raise hard limits here: run the test as an ordinary user")
	}
	return nil
}
