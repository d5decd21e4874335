package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/workspace"
)

// rootDir resolves paths with the workspace package's rules, without a
// blob store: the same rules the runner applies.
type rootDir string

func (r rootDir) Root() string                     { return string(r) }
func (r rootDir) Resolve(p string) (string, error) { return workspace.Resolve(string(r), p) }
func testEnv(t *testing.T) (Env, string) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return Env{Root: rootDir(dir), Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}}, dir
}

func call(t *testing.T, r *Registry, env Env, name, args string) Result {
	t.Helper()
	tool, raw, bad := r.Check(name, args)
	if bad != nil {
		return *bad
	}
	return r.Run(context.Background(), env, tool, raw)
}

func TestPathEscapesTouchNothing(t *testing.T) {
	env, dir := testEnv(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := NewRegistry(nil)
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"../evil","content":"x"}`},
		{"write_file", `{"path":"` + outside + `/evil","content":"x"}`},
		{"write_file", `{"path":"link/evil","content":"x"}`},
		{"read_file", `{"path":"link/secret"}`},
		{"edit_file", `{"path":"link/secret","old":"s","new":"t"}`},
		{"list_files", `{"path":"link"}`},
		{"read_file", `{"path":"a/../../etc/passwd"}`},
	} {
		res := call(t, r, env, c.tool, c.args)
		if res.Err == nil || res.Err.Code != CodePathEscape {
			t.Errorf("%s %s: %+v, want PATH_ESCAPE", c.tool, c.args, res)
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Fatalf("the outside directory changed: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s" {
		t.Fatal("a file outside was edited")
	}
}

func TestEditFile(t *testing.T) {
	env, dir := testEnv(t)
	r, _ := NewRegistry(nil)
	os.WriteFile(filepath.Join(dir, "f.go"), []byte("a := 1\nb := 1\n"), 0o644)
	if res := call(t, r, env, "edit_file", `{"path":"f.go","old":"x","new":"y"}`); res.Err == nil || res.Err.Code != CodeEditNoMatch {
		t.Fatalf("absent text: %+v", res)
	}
	if res := call(t, r, env, "edit_file", `{"path":"f.go","old":" := 1","new":" := 2"}`); res.Err == nil || res.Err.Code != CodeEditAmbiguous {
		t.Fatalf("ambiguous text: %+v", res)
	}
	if res := call(t, r, env, "edit_file", `{"path":"f.go","old":"b := 1","new":"b := 2"}`); res.Err != nil {
		t.Fatalf("edit: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.go")); string(b) != "a := 1\nb := 2\n" {
		t.Fatalf("edited file: %q", b)
	}
}

// A command that outlives its timeout is killed with its whole process
// group: a child it started in the background does not survive.
func TestCommandTimeoutKillsChildren(t *testing.T) {
	env, dir := testEnv(t)
	pidFile := filepath.Join(dir, "child.pid")
	res := Exec(context.Background(), env, "sleep 300 & echo $! > child.pid; wait", 300*time.Millisecond, 1024)
	if res.Err == nil || res.Err.Code != CodeTimeout {
		t.Fatalf("want a timeout, got %+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The child is gone (or a zombie being reaped): signal 0 fails, or ps
	// shows it defunct.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		out, _ := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		if strings.HasPrefix(strings.TrimSpace(string(out)), "Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d survived its command's timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command whose shell exited while a process it left in the background
// still held the output open (a server started with '&') times out as
// before, but the observation says so: a bare "timed out" sent models
// looking for a hang in a command that had finished at once.
func TestATimeoutHeldByABackgroundProcessSaysSo(t *testing.T) {
	env, _ := testEnv(t)
	res := Exec(context.Background(), env, "sleep 300 & echo started", time.Second, 1024)
	if res.Err == nil || res.Err.Code != CodeTimeout || !res.Err.Retryable || !strings.Contains(res.Output, "started") {
		t.Fatalf("want a retryable timeout keeping the output, got %+v %q", res.Err, res.Output)
	}
	for _, want := range []string{"exited with status 0", "left running", "kept its output open", "> file 2>&1 &"} {
		if !strings.Contains(res.Err.Message, want) {
			t.Errorf("the message %q does not say %q", res.Err.Message, want)
		}
	}
	// A command that itself runs past its timeout is told no such thing.
	res = Exec(context.Background(), env, "echo begun; sleep 300", 300*time.Millisecond, 1024)
	if res.Err == nil || res.Err.Code != CodeTimeout || strings.Contains(res.Err.Message, "left running") {
		t.Fatalf("a command still running at its timeout: %+v", res.Err)
	}
}

// The tool contract over the sandbox's result: a command killed by a
// signal (as a limit kills it) is COMMAND_FAILED naming the signal, with
// 128+signal as its exit code; a cancel is a retryable TIMEOUT saying so.
func TestCommandEndingsMapToToolErrors(t *testing.T) {
	env, _ := testEnv(t)
	res := Exec(context.Background(), env, "echo before; kill -KILL $$", time.Minute, 1024)
	if res.Err == nil || res.Err.Code != CodeCommandFailed || !strings.Contains(res.Err.Message, "killed by signal 9") ||
		res.ExitCode == nil || *res.ExitCode != 137 || !strings.Contains(res.Output, "before") {
		t.Fatalf("killed by a signal: %+v %v", res.Err, res.ExitCode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res = Exec(ctx, env, "sleep 300", time.Minute, 1024)
	if res.Err == nil || res.Err.Code != CodeTimeout || !res.Err.Retryable || !strings.Contains(res.Err.Message, "cancelled") || res.ExitCode != nil {
		t.Fatalf("cancelled: %+v", res.Err)
	}
}

func TestCommandOutputIsCappedAndMarked(t *testing.T) {
	env, _ := testEnv(t)
	r, _ := NewRegistry(nil)
	res := call(t, r, env, "run_command", `{"command":"head -c 100000 /dev/zero | tr '\\0' a; exit 3"}`)
	if !res.Truncated || len(res.Output) > commandOutputCap+100 || !strings.Contains(res.Output, "[output cut:") {
		t.Fatalf("output not cut and marked: %d bytes, truncated=%v", len(res.Output), res.Truncated)
	}
	if res.ExitCode == nil || *res.ExitCode != 3 || res.Err.Code != CodeCommandFailed {
		t.Fatalf("exit status lost: %+v", res.Err)
	}
	var obs map[string]any
	if err := json.Unmarshal([]byte(res.Observation()), &obs); err != nil || obs["truncated"] != true || obs["ok"] != false {
		t.Fatalf("observation: %v %v", obs, err)
	}
}

func TestCommandEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("FACTLINE_SECRET_TOKEN", "hunter2")
	env, _ := testEnv(t)
	res := Exec(context.Background(), env, "env", time.Minute, 1<<16)
	if strings.Contains(res.Output, "hunter2") {
		t.Fatal("the runner's environment leaked into a command")
	}
}

func TestArgumentsAreCheckedBeforeAnythingRuns(t *testing.T) {
	env, dir := testEnv(t)
	r, _ := NewRegistry([]string{"write_file", "task_complete"})
	for _, c := range []struct{ tool, args, code string }{
		{"write_file", `{"path":"a"}`, CodeBadArguments},
		{"write_file", `{"path":"a","content":"x","mode":"0777"}`, CodeBadArguments},
		{"write_file", `not json`, CodeBadArguments},
		{"run_command", `{"command":"touch pwned"}`, CodeUnknownTool},
		{"task_complete", `{"status":"blocked"}`, CodeBadArguments},
		{"task_complete", `{"status":"maybe"}`, CodeBadArguments},
	} {
		res := call(t, r, env, c.tool, c.args)
		if res.Err == nil || res.Err.Code != c.code {
			t.Errorf("%s %s: %+v, want %s", c.tool, c.args, res.Err, c.code)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("a refused call touched the workspace: %v", entries)
	}
	res := call(t, r, env, "task_complete", `{"status":"blocked","reason":"no access","unmet":["deploy"]}`)
	if res.Intent == nil || res.Intent.Type() != "report_blocked" {
		t.Fatalf("task_complete intent: %+v", res)
	}
}

// A file longer than read_file's cap is cut, and the mark says how many
// bytes of the file were not shown (not how many were read past the cap).
func TestReadFileSaysHowMuchWasCut(t *testing.T) {
	env, dir := testEnv(t)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("x", 300_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := NewRegistry(nil)
	res := call(t, r, env, "read_file", `{"path":"big.txt"}`)
	want := "[output cut: " + strconv.Itoa(300_000-fileOutputCap) + " more bytes not shown]"
	if !res.Truncated || !strings.HasSuffix(res.Output, want) {
		t.Fatalf("cut marked as %q, want %q", res.Output[max(0, len(res.Output)-60):], want)
	}
}

func TestReadAndEditRefuseADirectoryNamingIt(t *testing.T) {
	env, dir := testEnv(t)
	if err := os.Mkdir(filepath.Join(dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, _ := NewRegistry(nil)
	for _, c := range []struct{ tool, args, want string }{
		{"read_file", `{"path":"pkg"}`, "pkg is a directory; use list_files"},
		{"edit_file", `{"path":"pkg","old":"a","new":"b"}`, "pkg is a directory"},
	} {
		res := call(t, r, env, c.tool, c.args)
		if res.Err == nil || res.Err.Code != CodeIsDirectory || res.Err.Message != c.want {
			t.Errorf("%s %s: got %+v, want %s %q", c.tool, c.args, res.Err, CodeIsDirectory, c.want)
		}
	}
}
