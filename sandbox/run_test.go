package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Run's contract without containment (a nil Sandbox): the command leads
// its own session, sees only the environment it is given (none for a nil
// Env), its output is capped and marked, a signal is reported as such,
// and a cancel is told apart from a timeout.
func TestRunContract(t *testing.T) {
	t.Setenv("FACTLINE_SECRET_TOKEN", "hunter2")
	var sb *Sandbox
	ctx := context.Background()
	dir := t.TempDir()
	res, err := sb.Run(ctx, Command{Script: `read -r -a f < /proc/$$/stat; echo "${f[5]} $$"; env`, Dir: dir, Timeout: time.Minute, OutputCap: 4096})
	if err != nil || failed(res) {
		t.Fatalf("%v %+v", err, res)
	}
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if sid := strings.Fields(lines[0]); len(sid) != 2 || sid[0] != sid[1] {
		t.Errorf("the command does not lead its own session: %q", lines[0])
	}
	if strings.Contains(res.Output, "hunter2") {
		t.Error("the caller's environment leaked into a command run with a nil Env")
	}

	res, err = sb.Run(ctx, Command{Script: `head -c 10000 /dev/zero | tr '\0' a; exit 3`, Dir: dir, Timeout: time.Minute, OutputCap: 100})
	if err != nil || res.ExitCode != 3 || !res.Truncated || !strings.HasPrefix(res.Output, strings.Repeat("a", 100)+"\n[output cut: 9900 more bytes") {
		t.Fatalf("capped output: %v %+v", err, res)
	}

	res, err = sb.Run(ctx, Command{Script: `kill -TERM $$`, Dir: dir, Timeout: time.Minute})
	if err != nil || res.Signal.String() != "terminated" || res.ExitCode != 128+15 || res.TimedOut {
		t.Fatalf("killed by SIGTERM: %v %+v", err, res)
	}

	res, err = sb.Run(ctx, Command{Script: `sleep 300`, Dir: dir, Timeout: 100 * time.Millisecond})
	if err != nil || !res.TimedOut || res.Cancelled {
		t.Fatalf("timeout: %v %+v", err, res)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err = sb.Run(cctx, Command{Script: `sleep 300`, Dir: dir, Timeout: time.Minute})
	if err != nil || !res.TimedOut || !res.Cancelled {
		t.Fatalf("cancel: %v %+v", err, res)
	}

	if _, err := sb.Run(ctx, Command{Script: `true`, Dir: dir + "/missing"}); err == nil || !strings.Contains(err.Error(), "start command") {
		t.Fatalf("a command that cannot start: %v", err)
	}
}

// With EndsAtExit a command ends when its process exits, though a child
// it left in the background still holds the output open: what it printed
// before is kept, and the child is killed with its process group. Without
// it the command waits for the output to close, here until its timeout.
func TestRunEndsAtExitDespiteAChildHoldingTheOutput(t *testing.T) {
	var sb *Sandbox
	dir := t.TempDir()
	script := `sleep 600 & echo started; exit 4`
	res, err := sb.Run(context.Background(), Command{Script: script, Dir: dir, Timeout: 2 * time.Minute, OutputCap: 4096, EndsAtExit: true})
	if err != nil || res.TimedOut || res.ExitCode != 4 || !strings.Contains(res.Output, "started") {
		t.Fatalf("ends at exit: %v %+v, want exit 4 with its output, not timed out", err, res)
	}
	res, err = sb.Run(context.Background(), Command{Script: script, Dir: dir, Timeout: time.Second, OutputCap: 4096})
	if err != nil || !res.TimedOut {
		t.Fatalf("without EndsAtExit: %v %+v, want the command held open by its child's output until the timeout", err, res)
	}
}

// With KeepLast the output kept is its end, where a program's last words
// are, after a first line counting what came before; without it, its
// start, as before.
func TestRunKeepLastKeepsTheEndOfTheOutput(t *testing.T) {
	var sb *Sandbox
	dir := t.TempDir()
	script := `head -c 10000 /dev/zero | tr '\0' a; echo; echo the last words >&2; exit 1`
	res, err := sb.Run(context.Background(), Command{Script: script, Dir: dir, Timeout: time.Minute, OutputCap: 100, KeepLast: true})
	if err != nil || res.ExitCode != 1 || !res.Truncated || !strings.HasSuffix(res.Output, "\nthe last words\n") ||
		!strings.HasPrefix(res.Output, "[output cut: 9916 earlier bytes not shown]\n") || len(res.Output) != 100+len("[output cut: 9916 earlier bytes not shown]\n") {
		t.Fatalf("keep last: %v %+v", err, res)
	}
	res, err = sb.Run(context.Background(), Command{Script: script, Dir: dir, Timeout: time.Minute, OutputCap: 100})
	if err != nil || !strings.HasPrefix(res.Output, strings.Repeat("a", 100)+"\n[output cut: ") || strings.Contains(res.Output, "last words") {
		t.Fatalf("keep first: %v %+v", err, res)
	}
}
