package main

import (
	"errors"
	"fmt"

	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/suites"
)

// checkExtensions admits every extension the suite's cases name against
// the allowlist the embedded runner of a local run will have, as that
// runner does (extensions.Admit): a refusal would end every run of the
// case errored, so it is said at once, before anything is submitted, as a
// container image the engine lacks is (suites.ResolveImage).
func checkExtensions(s *suites.Suite, allow *extensions.Allowlist) error {
	for _, c := range s.Cases {
		if _, err := extensions.Admit(allow, c.Extensions); err != nil {
			fix := "give the embedded runner an allowlist that pins it: --extensions FILE (docs/extensions.md)"
			var rej *extensions.Rejection
			if errors.As(err, &rej) && rej.Code != extensions.RejectNotAllowlisted {
				fix = "pin the executable as it is in the --extensions allowlist (its path, and its digest: sha256sum FILE; docs/extensions.md)"
			}
			return fmt.Errorf("case %s: %w; nothing was submitted: every run of the case would end errored. To run it, %s", c.ID, err, fix)
		}
	}
	return nil
}
