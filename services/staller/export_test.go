package staller

// Folded is how many facts s has folded so far.
func Folded(s *Service) int64 { return s.folds.Folded() }
