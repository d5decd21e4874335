package grader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/services/grader/grade"
	"github.com/factline/factline/workspace"
)

// Bounds of what an instrument reads and reports.
const (
	outputCap   = 16 << 10 // command output kept
	detailCap   = 2000     // bytes of output or reply quoted in a result's detail
	fileReadCap = 16 << 20 // the largest file a file check or a judge reads
	listCap     = 10       // paths named in a detail before "and n more"
)

// job is one grading of one sealed candidate.
type job struct {
	suite, run string
	snapshot   events.Digest
	in         inputs
	specs      map[grade.Key]cases.Instrument
	// scorers are the plan's scorers: the deciding one sets its
	// instrument's outcome.
	scorers []grade.Scorer
}

// instrumentEnv gives instruments what they read: the candidate restored in
// a fresh directory (once per job, for instruments that only read it), and
// the fixture's and candidate's manifests. A command gets a fresh copy of
// its own, since it may change the tree.
type instrumentEnv struct {
	s        *Service
	job      job
	dirs     []string
	pristine string
	fixture  *workspace.Manifest
	cand     *workspace.Manifest
}

func (e *instrumentEnv) close() {
	for _, d := range e.dirs {
		_ = os.RemoveAll(d)
	}
}

// restore materialises the candidate into a fresh directory and returns the
// directory holding it (ws), a home and a tmp beside it.
func (e *instrumentEnv) restore(ctx context.Context) (string, error) {
	// Named after this process, so that the next grader here can tell
	// whether it is still in use.
	site, err := sandbox.OpenSite(e.s.cfg.workDir, siteKind, "grade-"+e.job.run)
	if err != nil {
		return "", err
	}
	dir := site.Dir()
	e.dirs = append(e.dirs, dir)
	for _, d := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	if _, err := workspace.Materialise(ctx, e.s.sh.Bus.Blobs(), e.job.snapshot, filepath.Join(dir, "ws"), workspace.Options{}); err != nil {
		return "", fmt.Errorf("restore the candidate %s: %w", e.job.snapshot, err)
	}
	return dir, nil
}

func (e *instrumentEnv) readOnlyTree(ctx context.Context) (string, error) {
	if e.pristine == "" {
		dir, err := e.restore(ctx)
		if err != nil {
			return "", err
		}
		e.pristine = filepath.Join(dir, "ws")
	}
	return e.pristine, nil
}

// manifests returns the fixture's manifest (empty when the case has no
// fixture) and the candidate's.
func (e *instrumentEnv) manifests(ctx context.Context) (workspace.Manifest, workspace.Manifest, error) {
	if e.fixture == nil {
		var fx workspace.Manifest
		if d := e.job.in.kase.FixtureDigest; d != "" {
			m, err := workspace.LoadManifest(ctx, e.s.sh.Bus.Blobs(), d)
			if err != nil {
				return fx, fx, fmt.Errorf("load the fixture manifest %s: %w", d, err)
			}
			fx = m
		}
		e.fixture = &fx
	}
	if e.cand == nil {
		m, err := workspace.LoadManifest(ctx, e.s.sh.Bus.Blobs(), e.job.snapshot)
		if err != nil {
			return *e.fixture, m, fmt.Errorf("load the candidate manifest %s: %w", e.job.snapshot, err)
		}
		e.cand = &m
	}
	return *e.fixture, *e.cand, nil
}

// run runs one instrument and returns its result and, for a command that
// ran, the containment it ran under. Problems of the grader (the candidate
// cannot be restored, a command cannot start) are errored results, never
// failures of the candidate.
func (e *instrumentEnv) run(ctx context.Context, in cases.Instrument) (events.InstrumentResult, *events.Containment, *events.JudgeCall) {
	var res events.InstrumentResult
	var contained *events.Containment
	var judged *events.JudgeCall
	var err error
	switch in.Kind {
	case cases.InstrumentCommand:
		res, contained, err = e.command(ctx, in)
	case cases.InstrumentFile:
		res, err = e.file(ctx, in)
	case cases.InstrumentScope:
		res, err = e.scope(ctx, in)
	case cases.InstrumentJudge:
		res, judged = e.judge(ctx, in)
	default:
		err = fmt.Errorf("unknown instrument kind %q", in.Kind)
	}
	if err != nil {
		res = events.InstrumentResult{Outcome: events.InstrumentErrored, Detail: clip(err.Error())}
	}
	return res, contained, judged
}

func passed(detail string) (events.InstrumentResult, error) {
	return events.InstrumentResult{Outcome: events.InstrumentPassed, Detail: clip(detail)}, nil
}

func failed(detail string) (events.InstrumentResult, error) {
	return events.InstrumentResult{Outcome: events.InstrumentFailed, Detail: clip(detail)}, nil
}

func errored(detail string) (events.InstrumentResult, error) {
	return events.InstrumentResult{Outcome: events.InstrumentErrored, Detail: clip(detail)}, nil
}

// command runs a command instrument in a fresh copy of the candidate, with
// its protected test files taken from the fixture, contained in a sandbox
// of its own. It returns the containment when the command ran.
func (e *instrumentEnv) command(ctx context.Context, in cases.Instrument) (events.InstrumentResult, *events.Containment, error) {
	if e.s.containment == nil {
		res, err := errored(fmt.Sprintf("cannot run the command: %v", e.s.probeErr))
		return res, nil, err
	}
	dir, err := e.restore(ctx)
	if err != nil {
		return events.InstrumentResult{}, nil, err
	}
	ws := filepath.Join(dir, "ws")
	var note string
	if len(in.TestsFromFixture) > 0 {
		changed, err := e.protected(ctx, in.TestsFromFixture)
		if err != nil {
			return events.InstrumentResult{}, nil, err
		}
		if len(changed) > 0 {
			if in.OnTestEdit == cases.TestEditRefuse {
				res, err := failed("refused: the candidate changed files its tests come from the fixture: " + list(paths(changed)))
				return res, nil, err
			}
			if err := e.restoreFromFixture(ctx, ws, changed); err != nil {
				return events.InstrumentResult{}, nil, fmt.Errorf("restore protected files from the fixture: %w", err)
			}
			note = "restored from the fixture: " + list(paths(changed)) + "\n"
		}
	}
	// A sandbox per command copy: its own uid (when the grader is root),
	// to which the copy, HOME and TMPDIR are handed just before the
	// command runs, after the protected files were written back, so the
	// command can read and run them.
	// With an environment, the copy is mounted in a fresh container of
	// the case's image (environment.go).
	sb, err := e.sandbox(ctx, ws, filepath.Join(dir, "home"), filepath.Join(dir, "tmp"))
	if err != nil {
		if ctx.Err() != nil {
			return events.InstrumentResult{}, nil, ctx.Err()
		}
		res, err := errored(fmt.Sprintf("cannot run the command: %v", err))
		return res, nil, err
	}
	defer func() {
		if err := sb.Close(context.WithoutCancel(ctx)); err != nil {
			e.s.sh.Log.Warn("removing a command's container failed", "suite", e.job.suite, "run", e.job.run, "err", err)
		}
	}()
	if sb.UID() != 0 {
		// The command's user may pass through its directory but not change
		// it: it cannot swap the copy for a link elsewhere.
		if err := os.Chmod(dir, 0o711); err != nil {
			return events.InstrumentResult{}, nil, err
		}
	}
	run, err := sb.Run(ctx, sandbox.Command{Script: in.Command, Dir: ws, Env: commandEnv(dir, e.job.in.kase.Env),
		Timeout: in.Timeout.Std(), OutputCap: outputCap})
	if ctx.Err() != nil {
		return events.InstrumentResult{}, nil, ctx.Err()
	}
	if err != nil {
		res, err := errored(fmt.Sprintf("cannot run the command: %v", err))
		return res, nil, err
	}
	res, err := commandOutcome(in, run, note)
	if err == nil && in.Score != nil {
		res = e.scoreCommand(in, ws, run, res)
	}
	return res, sb.Record(), err
}

// commandOutcome turns how a command ended into the instrument's outcome.
func commandOutcome(in cases.Instrument, run sandbox.Result, note string) (events.InstrumentResult, error) {
	code := run.ExitCode
	switch {
	case run.TimedOut:
		return failed(note + fmt.Sprintf("timed out after %v; the command and its children were killed\n%s", in.Timeout.Std(), tail(run.Output)))
	case run.Signal != 0:
		// A limit (CPU time) or the kernel killed the command itself: it
		// did not pass, whatever exit it was meant to have.
		return failed(note + fmt.Sprintf("killed by signal %d (%v)\n%s", int(run.Signal), run.Signal, tail(run.Output)))
	case code == in.ExpectExit:
		return passed(note + fmt.Sprintf("exit %d\n%s", code, tail(run.Output)))
	case code == 126 || code == 127:
		// bash's own codes for a command it could not find or execute: the
		// check never ran, which is not a verdict on the candidate.
		return errored(note + fmt.Sprintf("the command could not run (exit %d: not found or not executable)\n%s", code, tail(run.Output)))
	}
	return failed(note + fmt.Sprintf("exit %d, want %d\n%s", code, in.ExpectExit, tail(run.Output)))
}

// protected returns the differences between the fixture and the candidate
// among the paths the globs cover.
func (e *instrumentEnv) protected(ctx context.Context, globs []string) ([]workspace.PathChange, error) {
	fx, cand, err := e.manifests(ctx)
	if err != nil {
		return nil, err
	}
	pick := func(m workspace.Manifest) (workspace.Manifest, error) {
		var keep []workspace.Entry
		for _, en := range m.Entries() {
			if cases.MatchAny(globs, en.Path) {
				keep = append(keep, en)
			}
		}
		return workspace.NewManifest(keep)
	}
	a, err := pick(fx)
	if err != nil {
		return nil, err
	}
	b, err := pick(cand)
	if err != nil {
		return nil, err
	}
	return workspace.Diff(a, b), nil
}

// restoreFromFixture makes every changed protected path in ws what the
// fixture has: the candidate's version goes, the fixture's comes back.
// Writes go through an os.Root on ws, so nothing can leave it.
func (e *instrumentEnv) restoreFromFixture(ctx context.Context, ws string, changed []workspace.PathChange) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, c := range changed {
		if c.Kind != workspace.Removed {
			if err := root.RemoveAll(c.Path); err != nil {
				return err
			}
		}
		if c.Kind == workspace.Added {
			continue
		}
		en := c.Old
		if en.Kind == workspace.KindDir {
			if err := ensureDir(root, en.Path); err != nil {
				return err
			}
			continue
		}
		if err := ensureDir(root, path.Dir(en.Path)); err != nil {
			return err
		}
		switch en.Kind {
		case workspace.KindSymlink:
			err = root.Symlink(en.Target, en.Path)
		default:
			var data []byte
			if data, err = e.s.sh.Bus.Blobs().Get(ctx, en.Digest); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if en.Kind == workspace.KindExec {
				// No fork may inherit the write descriptor of a file a
				// check runs at once: it would be "text file busy".
				mode = 0o755
				syscall.ForkLock.Lock()
			}
			if err = root.WriteFile(en.Path, data, mode); err == nil {
				err = root.Chmod(en.Path, mode)
			}
			if en.Kind == workspace.KindExec {
				syscall.ForkLock.Unlock()
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ensureDir makes dir a directory inside root, removing whatever non-
// directory (a file, a symlink) the candidate put on its way.
func ensureDir(root *os.Root, dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	els := strings.Split(dir, "/")
	for i := range els {
		p := strings.Join(els[:i+1], "/")
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			if err := root.Remove(p); err != nil {
				return err
			}
			break
		}
	}
	return root.MkdirAll(dir, 0o755)
}

// commandEnv is the minimal environment of a command: a PATH, a HOME and a
// TMPDIR (TMP and TEMP alike) outside the candidate, a locale, and what the case adds. Nothing
// else of the grader's environment (keys, tokens) reaches it.
func commandEnv(dir string, extra map[string]string) []string {
	p := os.Getenv("PATH")
	if p == "" {
		p = "/usr/local/bin:/usr/bin:/bin"
	}
	tmp := filepath.Join(dir, "tmp")
	env := []string{"PATH=" + p, "HOME=" + filepath.Join(dir, "home"), "TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// file runs a file check on the restored candidate.
func (e *instrumentEnv) file(ctx context.Context, in cases.Instrument) (events.InstrumentResult, error) {
	dir, err := e.readOnlyTree(ctx)
	if err != nil {
		return events.InstrumentResult{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return events.InstrumentResult{}, err
	}
	defer root.Close()
	if in.Exists != nil {
		// The path itself, not what a symlink there points to: a link is
		// something the candidate put there.
		_, lerr := root.Lstat(in.Path)
		exists := lerr == nil
		switch {
		case exists == *in.Exists && exists:
			return passed(in.Path + " exists")
		case exists == *in.Exists:
			return passed(in.Path + " does not exist")
		case exists:
			return failed(in.Path + " exists, and must not")
		}
		return failed(in.Path + " does not exist")
	}
	fi, statErr := root.Stat(in.Path)
	if statErr != nil {
		return failed(fmt.Sprintf("%s cannot be read: %v", in.Path, statErr))
	}
	if !fi.Mode().IsRegular() {
		return failed(in.Path + " is not a regular file")
	}
	if fi.Size() > fileReadCap {
		return failed(fmt.Sprintf("%s is %d bytes, more than the %d a file check reads", in.Path, fi.Size(), fileReadCap))
	}
	data, err := root.ReadFile(in.Path)
	if err != nil {
		return failed(fmt.Sprintf("%s cannot be read: %v", in.Path, err))
	}
	switch {
	case in.Contains != "":
		if bytes.Contains(data, []byte(in.Contains)) {
			return passed(fmt.Sprintf("%s contains %q", in.Path, in.Contains))
		}
		return failed(fmt.Sprintf("%s does not contain %q", in.Path, in.Contains))
	case in.Matches != "":
		re, err := regexp.Compile(in.Matches)
		if err != nil {
			return events.InstrumentResult{}, err
		}
		if re.Match(data) {
			return passed(fmt.Sprintf("%s matches %s", in.Path, in.Matches))
		}
		return failed(fmt.Sprintf("%s does not match %s", in.Path, in.Matches))
	}
	return jsonCheck(in, data)
}

// jsonCheck selects a value by the instrument's JSON path and compares it
// with the expected one as JSON values (numbers by value, objects by keys).
func jsonCheck(in cases.Instrument, data []byte) (events.InstrumentResult, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return failed(fmt.Sprintf("%s is not JSON: %v", in.Path, err))
	}
	steps, err := cases.ParseJSONPath(in.JSONPath)
	if err != nil {
		return events.InstrumentResult{}, err
	}
	cur := doc
	for _, st := range steps {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[st.Key]
			if st.IsIndex || !ok {
				return failed(fmt.Sprintf("%s: %s selects nothing", in.Path, in.JSONPath))
			}
			cur = next
		case []any:
			if !st.IsIndex || st.Index >= len(v) {
				return failed(fmt.Sprintf("%s: %s selects nothing", in.Path, in.JSONPath))
			}
			cur = v[st.Index]
		default:
			return failed(fmt.Sprintf("%s: %s selects nothing", in.Path, in.JSONPath))
		}
	}
	var want any
	raw, err := json.Marshal(in.Equals)
	if err != nil {
		return events.InstrumentResult{}, fmt.Errorf("the expected value: %w", err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		return events.InstrumentResult{}, fmt.Errorf("the expected value: %w", err)
	}
	got, _ := json.Marshal(cur)
	if reflect.DeepEqual(cur, want) {
		return passed(fmt.Sprintf("%s: %s is %s", in.Path, in.JSONPath, got))
	}
	return failed(fmt.Sprintf("%s: %s is %s, want %s", in.Path, in.JSONPath, got, raw))
}

// scope checks that the paths the candidate changed relative to the fixture
// stay within the allowed globs.
func (e *instrumentEnv) scope(ctx context.Context, in cases.Instrument) (events.InstrumentResult, error) {
	fx, cand, err := e.manifests(ctx)
	if err != nil {
		return events.InstrumentResult{}, err
	}
	changes := workspace.Diff(fx, cand)
	var out []string
	for _, c := range changes {
		if !cases.MatchAny(in.Allow, c.Path) {
			out = append(out, fmt.Sprintf("%s (%s)", c.Path, c.Kind))
		}
	}
	if len(out) > 0 {
		return failed(fmt.Sprintf("%d of %d changed paths are out of scope: %s", len(out), len(changes), list(out)))
	}
	return passed(fmt.Sprintf("%d changed paths, all within %v", len(changes), in.Allow))
}

func paths(cs []workspace.PathChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

// list names at most listCap items.
func list(items []string) string {
	if len(items) <= listCap {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:listCap], ", ") + fmt.Sprintf(" and %d more", len(items)-listCap)
}

// tail keeps the end of a command's output, where the verdict usually is.
func tail(s string) string {
	if len(s) <= detailCap {
		return s
	}
	return "…" + s[len(s)-detailCap:]
}

func clip(s string) string {
	if len(s) <= 2*detailCap {
		return s
	}
	return s[:2*detailCap] + "…"
}
