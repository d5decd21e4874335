package whatif

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Summary is one candidate over every run.
type Summary struct {
	Candidate Candidate `json:"candidate"`
	Runs      int       `json:"runs"`
	Same      int       `json:"same"`
	// Earlier splits by what the recording shows after the candidate's
	// stop: a verified pass (a false stop), a failure (a true stall), or
	// no definitive grade.
	Earlier        int `json:"earlier"`
	FalseStops     int `json:"false_stops"`
	TrueStalls     int `json:"true_stalls"`
	EarlierUngrade int `json:"earlier_ungraded"`
	// Later runs go on past the recorded stop: their outcome is unknown.
	Later    int       `json:"later"`
	Saved    Saved     `json:"saved"`
	Outcomes []Outcome `json:"outcomes"`
}

// Report is every candidate's summary, the recorded policy first.
type Report struct {
	Runs       int       `json:"runs"`
	Candidates []Summary `json:"candidates"`
}

// Evaluate replays every run under the recorded policy and under each
// candidate.
func Evaluate(runs []Run, candidates []Candidate) Report {
	all := append([]Candidate{{Name: Recorded}}, candidates...)
	rep := Report{Runs: len(runs)}
	for _, c := range all {
		s := Summary{Candidate: c, Runs: len(runs), Outcomes: []Outcome{}}
		over := &c.Stall
		if c.Name == Recorded {
			over = nil
		}
		for _, r := range runs {
			o := Replay(r, over)
			s.Outcomes = append(s.Outcomes, o)
			switch o.Change {
			case Same:
				s.Same++
			case Later:
				s.Later++
			case Earlier:
				s.Earlier++
				s.Saved.add(o.Saved)
				switch o.Grade {
				case Passed:
					s.FalseStops++
				case Failed:
					s.TrueStalls++
				default:
					s.EarlierUngrade++
				}
			}
		}
		rep.Candidates = append(rep.Candidates, s)
	}
	return rep
}

// WriteText prints one line per candidate, then the runs each candidate
// decides differently from the recording.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "policy\truns\tsame\tearlier\tfalse stops\ttrue stalls\tungraded\tlater (unknown)\tturns saved\ttokens saved\tcost saved\twall saved\n")
	for _, s := range r.Candidates {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", s.Candidate.Name, s.Runs, s.Same, s.Earlier,
			s.FalseStops, s.TrueStalls, s.EarlierUngrade, s.Later, s.Saved.Turns, s.Saved.InputTokens+s.Saved.OutputTokens,
			costText(s.Saved), s.Saved.Wall.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Candidates {
		for _, o := range s.Outcomes {
			switch o.Change {
			case Earlier:
				what := "a true stall: the recording never passed"
				switch o.Grade {
				case Passed:
					what = "a false stop: the recording went on to pass"
				case Ungraded:
					what = "the recording has no definitive grade"
				}
				fmt.Fprintf(w, "%s: %s/%s stops at turn %d (%s), recorded %s; %s\n", s.Candidate.Name, o.Suite, o.Run, o.Stop, o.Cause, recordedEnd(o), what)
			case Later:
				fmt.Fprintf(w, "%s: %s/%s goes on past the recorded stop at turn %d; what would follow was not recorded\n", s.Candidate.Name, o.Suite, o.Run, o.RecordedStop)
			}
		}
	}
	return nil
}

func recordedEnd(o Outcome) string {
	if o.RecordedStop != 0 {
		return fmt.Sprintf("stall stop at turn %d", o.RecordedStop)
	}
	return fmt.Sprintf("%d turns", o.Turns)
}

// costText is the saved cost, or unknown when a reply in the saved turns
// had none: a partial sum would read as the whole.
func costText(s Saved) string {
	if s.CostUnknown > 0 {
		return fmt.Sprintf("unknown (%d replies without cost)", s.CostUnknown)
	}
	return fmt.Sprint(s.Cost)
}
