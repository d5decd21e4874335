package runner

import "context"

// SetBeforeClaim makes s call f just before each attempt commits its claim,
// so that a test can settle work as another attempt would in that window.
func SetBeforeClaim(s *Service, f func(ctx context.Context, suite, run string)) { s.beforeClaim = f }
