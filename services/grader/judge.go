package grader

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/hosted"
	"github.com/factline/factline/models/scripted"
	"github.com/factline/factline/services/grader/grade"
	"github.com/factline/factline/workspace"
)

// DefaultJudges builds a judge's model from the case: a scripted model from
// its inline script, or a hosted API (package hosted) whose key comes from
// the environment.
func DefaultJudges(ctx context.Context, in cases.Instrument) (models.Model, error) {
	m := in.Model
	switch {
	case m.Provider == cases.ProviderScripted:
		return scripted.Parse(in.ID+".yaml", []byte(in.Script))
	case hosted.Is(m.Provider):
		return hosted.New(*m)
	}
	return nil, fmt.Errorf("unknown judge provider %q", m.Provider)
}

// judgeSystem tells the reviewing model what it is for and how to answer.
const judgeSystem = "You review the final state of another agent's work against a rubric. " +
	"You see the rubric, the paths the work changed and the files named for review. " +
	"End your answer with one line: VERDICT: PASS if the work meets the rubric, VERDICT: FAIL if it does not."

// judge asks a reviewing model. Whatever keeps it from judging (the
// actor's own model named as judge, a provider error, a timeout, an answer
// without a verdict) makes it abstain: never a failure of the candidate.
// The model call, once made, is returned as the evaluator's spend,
// answered or not.
func (e *instrumentEnv) judge(ctx context.Context, in cases.Instrument) (events.InstrumentResult, *events.JudgeCall) {
	abstain := func(format string, args ...any) events.InstrumentResult {
		return events.InstrumentResult{Outcome: events.InstrumentAbstained, Detail: clip(fmt.Sprintf(format, args...))}
	}
	if in.Model == nil {
		return abstain("no judge model"), nil
	}
	if t := e.job.in.treat; t != nil && cases.SameModel(*in.Model, t.Model) {
		return abstain("the judge %s/%s is the actor's own model under treatment %s", in.Model.Provider, in.Model.Name, t.ID), nil
	}
	prompt, err := e.judgePrompt(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return events.InstrumentResult{}, nil
		}
		return abstain("cannot show the judge the candidate: %v", err), nil
	}
	model, err := e.s.cfg.judges(ctx, in)
	if err != nil {
		return abstain("judge unavailable: %v", err), nil
	}
	req := models.Request{
		Messages: []models.Message{{Role: models.RoleSystem, Content: judgeSystem}, {Role: models.RoleUser, Content: prompt}},
		Settings: models.Settings{Model: in.Model.Name, Temperature: in.Model.Temperature,
			MaxOutputTokens: in.Model.MaxOutputTokens, Seed: in.Model.Seed, TopP: in.Model.TopP, ReasoningEffort: in.Model.ReasoningEffort},
		Turn: 1,
	}
	cctx, cancel := context.WithTimeout(ctx, in.Timeout.Std())
	defer cancel()
	t0 := time.Now()
	reply, err := model.Complete(cctx, req)
	call := &events.JudgeCall{Model: in.Model.Provider + "/" + in.Model.Name, Millis: uint64(time.Since(t0).Milliseconds()),
		Usage: eventUsage(reply.Usage)}
	if err != nil {
		return abstain("judge unavailable: %v", err), call
	}
	res := e.judgeAnswer(in, reply.Text)
	return res, call
}

// judgeAnswer turns a judge's reply into its result: its rating on its
// scale, when it has one, and its outcome, from its verdict line or, when
// a scorer of its rating decides, from that rating. A judge that gives no
// verdict (or no rating its deciding scorer can read) abstains.
func (e *instrumentEnv) judgeAnswer(in cases.Instrument, text string) events.InstrumentResult {
	res := events.InstrumentResult{Outcome: events.InstrumentAbstained}
	if in.Scale != nil {
		s := grade.ReadJudgeScore(text, in.Scale[0], in.Scale[1])
		res.Score = &s
	}
	said := fmt.Sprintf("%s/%s: %s", in.Model.Provider, in.Model.Name, tail(text))
	for _, s := range e.job.scorers {
		if s.PassAt == nil || s.Instrument != events.InstrumentID(in.ID) {
			continue
		}
		if res.Score == nil || res.Score.Missing != "" {
			why := "the judge has no scale"
			if res.Score != nil {
				why = res.Score.Missing
			}
			res.Detail = clip(fmt.Sprintf("scorer %s decides, and %s: %s", s.ID, why, said))
			return res
		}
		var why string
		res.Outcome, why = grade.DecideByScore(s, res.Score)
		res.Detail = clip(why + "\n" + said)
		return res
	}
	verdict, ok := grade.ReadJudgeVerdict(text)
	if !ok {
		res.Detail = clip("the judge gave no VERDICT line: " + tail(text))
		return res
	}
	res.Outcome = verdict
	res.Detail = clip(said)
	return res
}

// eventUsage is a model call's usage as facts record it: nil (unknown)
// when the provider reported none.
func eventUsage(u *models.Usage) *events.Usage {
	if u == nil {
		return nil
	}
	return &events.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost,
		CachedInputTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens, CacheWriteInputTokens: u.CacheWriteInputTokens}
}

// judgePrompt is the rubric, the changed paths and the named files.
func (e *instrumentEnv) judgePrompt(ctx context.Context, in cases.Instrument) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Rubric:\n%s\n", in.Rubric)
	if in.Scale != nil {
		fmt.Fprintf(&b, "\nRate the work against the rubric from %s (worst) to %s (best), with your reasons, "+
			"on a line SCORE: n before the verdict line.\n",
			strconv.FormatFloat(in.Scale[0], 'g', -1, 64), strconv.FormatFloat(in.Scale[1], 'g', -1, 64))
	}
	fx, cand, err := e.manifests(ctx)
	if err != nil {
		return "", err
	}
	changed := paths(workspace.Diff(fx, cand))
	fmt.Fprintf(&b, "\nChanged paths (%d):\n%s\n", len(changed), strings.Join(changed, "\n"))
	if len(in.Files) == 0 {
		return b.String(), nil
	}
	dir, err := e.readOnlyTree(ctx)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	for _, p := range in.Files {
		data, err := root.ReadFile(p)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "\n--- %s: cannot be read (%v)\n", p, err)
		case len(data) > fileReadCap:
			fmt.Fprintf(&b, "\n--- %s: %d bytes, too large to show\n", p, len(data))
		default:
			fmt.Fprintf(&b, "\n--- %s\n%s\n", p, data)
		}
	}
	return b.String(), nil
}
