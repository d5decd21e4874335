package main

import (
	"fmt"

	"github.com/spf13/pflag"
)

// refuseExplicitZero refuses a flag among names the user gave as 0 (or
// 0s): these flags read 0 as "not given, take the default", so an explicit
// 0, which asks for none at all, would silently get the default instead.
func refuseExplicitZero(fs *pflag.FlagSet, names ...string) error {
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil || !f.Changed {
			continue
		}
		if v := f.Value.String(); v == "0" || v == "0s" {
			return usageError{fmt.Sprintf("--%s %s: must be more than 0; leave the flag out for its default", n, v)}
		}
	}
	return nil
}
