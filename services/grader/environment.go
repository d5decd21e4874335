package grader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/sandbox"
)

// LabelGrading marks the containers of command instruments, beside the
// suite and run labels, so that they are never taken for a runner's.
const LabelGrading = "io.factline.grading"

// sandbox makes the sandbox of one command instrument on its copy of the
// candidate (ws, with its home and tmp): a fresh container of the
// environment the case (or its treatment) names, or contained host
// processes. The image is the one pinned by digest in the stored case or
// treatment, never anything the candidate wrote, and each command gets a
// container of its own, so nothing a runner's command or an earlier
// check changed outside the workspace reaches it.
func (e *instrumentEnv) sandbox(ctx context.Context, ws, home, tmp string) (*sandbox.Sandbox, error) {
	env := cases.Apply(e.job.in.kase, e.job.in.treat).Environment
	if env == nil {
		return e.s.containment.ForAttempt(ws, home, tmp), nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("factline-grade.%s.%s.%s", e.job.suite, e.job.run, hex.EncodeToString(b[:]))
	return e.s.containment.Container(ctx, sandbox.ContainerSpec{
		Name: name, Env: env.Sandbox(), Workspace: ws, Home: home, Tmp: tmp,
		Labels: map[string]string{sandbox.LabelSuite: e.job.suite, sandbox.LabelRun: e.job.run, LabelGrading: "true"},
	})
}
