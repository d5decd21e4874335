package integration

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/grader/grade"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/services/staller"
	"github.com/factline/factline/suites"
)

// userNames are names a user or a model chooses (call IDs, control IDs,
// instruments and their versions), drawn from factline's own words, the
// separator and escape characters, and anything else.
var userNames = rapid.OneOf(
	rapid.SampledFrom([]string{"verdict", "conflict", "stall", "stop", "started", "replied", "completed", "intended",
		"claim", "control", "generation", "sealed", "ended", "requested", "reported", "submitted", "timeout",
		"run.ended", "grade.verdict", "stop.decided", "1", "t1", "_suite", "/", "%", "%2F", "a/1", "verdict/1", "1/judge"}),
	rapid.StringMatching(`[a-z0-9/%._-]{1,6}`),
)

// Every writer's message IDs for one run, under names a user chose, are
// distinct: no fact a user can name takes the ID of another fact, of any
// writer (a collision makes the second fact look committed already).
func TestNoUserNameReachesAnotherFactsMessageID(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		const run = "r1"
		snap := events.DigestOf([]byte("snapshot"))
		ids := map[string]string{}
		add := func(what, id string) {
			if prev, ok := ids[id]; ok && prev != what {
				t.Fatalf("%s and %s share the message ID %q", prev, what, id)
			}
			ids[id] = what
		}
		call, ctl := userNames.Draw(t, "call"), userNames.Draw(t, "control")
		in, ver := userNames.Draw(t, "instrument"), userNames.Draw(t, "version")
		turn := rapid.Uint32Range(1, 3).Draw(t, "turn")
		rev := rapid.Uint32Range(1, 3).Draw(t, "revision")
		n := fmt.Sprint(turn)
		// The runner's facts: a turn, a call, a control, a generation, the
		// claim, the seal and the end.
		add("turn.started", events.MessageID(run, events.KindTurnStarted, n))
		add("model.replied", events.MessageID(run, events.KindModelReplied, n))
		add("turn.completed", events.MessageID(run, events.KindTurnCompleted, n))
		add("dispatch.intended "+call, events.MessageID(run, events.KindDispatchIntended, n, call))
		add("dispatch.completed "+call, events.MessageID(run, events.KindDispatchComplete, n, call))
		add("control.accepted "+ctl, events.MessageID(run, events.KindControlAccepted, ctl))
		add("control.accepted timeout", events.MessageID(run, events.KindControlAccepted, "timeout", run+"/t"+n+"/"+call))
		add("task.generation", events.MessageID(run, events.KindTaskGeneration, n))
		add("run.claimed", events.MessageID(run, events.KindRunClaimed, ctl))
		add("candidate.sealed", events.MessageID(run, events.KindCandidateSealed))
		add("run.ended", events.MessageID(run, events.KindRunEnded))
		// The other owners.
		add("stall.observed", staller.MsgID(run, turn))
		add("stop.decided", decider.MsgID(run, turn))
		add("grade.instrument "+in+"@"+ver, grade.InstrumentMsgID(run, snap, grade.Key{ID: events.InstrumentID(in), Version: ver}))
		add("grade.verdict", grade.VerdictMsgID(run, snap, rev))
		add("grade.conflict "+in, grade.ConflictMsgID(run, snap, rev, events.InstrumentID(in)))
		add("run.requested", measure.RequestMsgID(run))
		add("suite.reported", measure.ReportMsgID(snap))
		add("suite.submitted", suites.SubmitMsgID)
	})
}
