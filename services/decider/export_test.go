package decider

// Folded is how many facts s has folded so far.
func Folded(s *Service) int64 { return s.folds.Folded() }

// FoldsKept is how many runs' folds s keeps.
func FoldsKept(s *Service) int { return s.folds.Len() }

// RunsKept is how many run logs s's run cache keeps.
func RunsKept(s *Service) int { return s.sh.Runs.Len() }
