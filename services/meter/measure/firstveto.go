package measure

import "github.com/factline/factline/events"

// FirstVetoOf returns the first veto of the grade a report counts for
// run, read from the run's facts (its candidate.sealed and grade.verdict
// facts among them): the FirstVeto its row holds when the report is
// built from the log, which the report's JSON leaves out. nil when the
// counted grade has no veto, or there is none.
func FirstVetoOf(suite, run string, facts []events.Fact) *events.GradeVeto {
	l := NewLog(suite)
	for _, f := range facts {
		if f.Run == run {
			l.Apply(f)
		}
	}
	a := l.Runs[run]
	if a == nil {
		return nil
	}
	v, ok := verdictOf(a)
	if !ok || len(v.Vetoes) == 0 {
		return nil
	}
	return &v.Vetoes[0]
}
