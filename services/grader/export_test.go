package grader

// RunsKept is how many run logs s's run cache keeps.
func RunsKept(s *Service) int { return s.sh.Runs.Len() }
