package grader

import (
	"fmt"
	"os"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/services/grader/grade"
)

// scoreCommand reads a command instrument's score (from its output or the
// file it wrote in its copy of the candidate) into its result, and lets
// the plan's deciding scorer, if it reads this instrument, decide the
// outcome of a command that ran to its end (docs/grading.md#scores).
func (e *instrumentEnv) scoreCommand(in cases.Instrument, ws string, run sandbox.Result, res events.InstrumentResult) events.InstrumentResult {
	score := readCommandScore(in.Score, ws, run.Output)
	res.Score = &score
	ranToItsEnd := !run.TimedOut && run.Signal == 0 && res.Outcome != events.InstrumentErrored
	for _, s := range e.job.scorers {
		if s.PassAt == nil || s.Instrument != events.InstrumentID(in.ID) || !ranToItsEnd {
			continue
		}
		outcome, why := grade.DecideByScore(s, res.Score)
		res.Outcome = outcome
		res.Detail = clip(why + "\n" + res.Detail)
	}
	return res
}

// readCommandScore reads what a command's score block names: a JSON score
// line of its output or of a file, or a JUnit report file. A file that is
// missing, unreadable or too large yields no value, with the reason.
func readCommandScore(cs *cases.CommandScore, ws, output string) events.InstrumentScore {
	source := events.ScoreJSONLine
	if cs.Format == cases.ScoreFormatJUnit {
		source = events.ScoreJUnit
	}
	if cs.File == "" {
		return grade.ReadScoreLine([]byte(output))
	}
	data, err := readScoreFile(ws, cs.File)
	if err != nil {
		return events.InstrumentScore{Source: source, Missing: clip(err.Error())}
	}
	if source == events.ScoreJUnit {
		return grade.ReadJUnit(data)
	}
	return grade.ReadScoreLine(data)
}

// readScoreFile reads a file the command wrote, through an os.Root so a
// link out of the copy is refused, and at most fileReadCap bytes.
func readScoreFile(ws, name string) ([]byte, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("the score file %s cannot be read: %w", name, err)
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("the command wrote no score file %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the score file %s is not a regular file", name)
	}
	if fi.Size() > fileReadCap {
		return nil, fmt.Errorf("the score file %s is %d bytes, more than the %d the grader reads", name, fi.Size(), fileReadCap)
	}
	data, err := root.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("the score file %s cannot be read: %w", name, err)
	}
	return data, nil
}
