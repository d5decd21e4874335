package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/factline/factline/events"
	"github.com/factline/factline/workspace"
)

const fileOutputCap = 64 << 10

// resolve maps a tool's path argument into the workspace or fails typed:
// PATH_ESCAPE only for a path that leads out of it. One that stays inside
// but cannot be followed (a symlink loop, a file used as a directory) is
// the file system error it is, so that the model does not go looking for
// an escape it never made.
func resolve(env Env, p string) (string, *Result) {
	abs, err := env.Root.Resolve(p)
	if err == nil {
		return abs, nil
	}
	var pe *workspace.PathError
	var res Result
	switch {
	case errors.Is(err, workspace.ErrEscape):
		res = Fail(CodePathEscape, "%v", err)
	case errors.As(err, &pe) && strings.Contains(pe.Reason, "not a directory"):
		res = Fail(CodeNotDirectory, "%s: %s", p, pe.Reason)
	case errors.As(err, &pe):
		res = Fail(CodeIO, "%s: %s", p, pe.Reason)
	default:
		res = fileError(p, err)
	}
	return "", &res
}

// existing resolves p in the workspace and returns what is there, or the
// typed result that says why nothing is (the path escapes, it does not
// exist, it cannot be read).
func existing(env Env, p string) (string, fs.FileInfo, *Result) {
	abs, bad := resolve(env, p)
	if bad != nil {
		return "", nil, bad
	}
	st, err := os.Stat(abs)
	if err != nil {
		res := fileError(p, err)
		return "", nil, &res
	}
	return abs, st, nil
}

// existingFile reads the file at p for a tool that works on a file, or
// returns the typed result that says why it cannot: existing's reasons, a
// directory there (CodeIsDirectory, hint following the reason), or a
// failed read. It reads at most most bytes, the whole file when most is
// negative.
func existingFile(env Env, p, hint string, most int64) (string, fs.FileInfo, []byte, *Result) {
	abs, st, bad := existing(env, p)
	if bad != nil {
		return "", nil, nil, bad
	}
	if st.IsDir() {
		res := Fail(CodeIsDirectory, "%s is a directory%s", p, hint)
		return "", nil, nil, &res
	}
	data, err := readAtMost(abs, st.Size(), most)
	if err != nil {
		res := fileError(p, err)
		return "", nil, nil, &res
	}
	return abs, st, data, nil
}

// readAtMost reads the file at abs, whose size is size: at most most
// bytes, all of it when most is negative.
func readAtMost(abs string, size, most int64) ([]byte, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if most < 0 {
		return io.ReadAll(f)
	}
	buf := make([]byte, min(size, most))
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// fileError turns an OS error into a typed result.
func fileError(p string, err error) Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Fail(CodeNotFound, "%s does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return Fail(CodeIO, "%s: permission denied", p)
	}
	return Fail(CodeIO, "%s: %v", p, err)
}

// ReadFile reads a text file of the workspace.
type ReadFile struct{}

// Contract implements Tool.
func (ReadFile) Contract() Contract {
	return Contract{
		Name:        "read_file",
		Description: "Read a file of the workspace. Paths are relative to the workspace root.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],
"properties":{"path":{"type":"string","minLength":1,"description":"file path relative to the workspace root"}}}`),
		Effect: events.EffectRead, Approval: ApprovalNever, Timeout: 10 * time.Second,
		OutputCap: fileOutputCap, Idempotent: true,
	}
}

// Run implements Tool.
func (ReadFile) Run(_ context.Context, env Env, raw json.RawMessage) Result {
	var a struct{ Path string }
	_ = json.Unmarshal(raw, &a)
	// Read one byte past the cap so the cut is reported.
	_, st, data, bad := existingFile(env, a.Path, "; use list_files", fileOutputCap+1)
	if bad != nil {
		return *bad
	}
	if int64(len(data)) > fileOutputCap {
		// Cut here, where the file's size is known: the mark counts the
		// bytes of the file not shown, not the one read past the cap.
		return Result{Output: capKnown(string(data), fileOutputCap, st.Size()), Truncated: true}
	}
	return Result{Output: string(data)}
}

// ListFiles lists a directory of the workspace.
type ListFiles struct{}

// Contract implements Tool.
func (ListFiles) Contract() Contract {
	return Contract{
		Name:        "list_files",
		Description: "List the files under a directory of the workspace (default: the root), one path per line; directories end in '/'.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,
"properties":{"path":{"type":"string","description":"directory relative to the workspace root"},"recursive":{"type":"boolean"}}}`),
		Effect: events.EffectRead, Approval: ApprovalNever, Timeout: 10 * time.Second,
		OutputCap: fileOutputCap, Idempotent: true,
	}
}

// Run implements Tool.
func (ListFiles) Run(ctx context.Context, env Env, raw json.RawMessage) Result {
	var a struct {
		Path      string
		Recursive bool
	}
	_ = json.Unmarshal(raw, &a)
	if a.Path == "" {
		a.Path = "."
	}
	abs, st, bad := existing(env, a.Path)
	if bad != nil {
		return *bad
	}
	if !st.IsDir() {
		return Fail(CodeNotDirectory, "%s is not a directory", a.Path)
	}
	var lines []string
	err := filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == abs {
			return nil
		}
		rel, _ := filepath.Rel(abs, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			lines = append(lines, listedPath(rel+"/"))
			if !a.Recursive {
				return filepath.SkipDir
			}
			return nil
		}
		lines = append(lines, listedPath(rel))
		return nil
	})
	if err != nil {
		return fileError(a.Path, err)
	}
	sort.Strings(lines)
	return Result{Output: strings.Join(lines, "\n")}
}

// listedPath is how list_files shows a path on its line: as it is, unless
// it would not read as one path. A control character (a newline would
// split it over two lines), invalid UTF-8 or a leading quote makes it a
// quoted string: JSON's quoting, so the model passes back what it read;
// for invalid UTF-8, which JSON cannot carry, Go's (\xff).
func listedPath(p string) string {
	plain := utf8.ValidString(p) && !strings.HasPrefix(p, `"`) && !strings.ContainsFunc(p, unicode.IsControl)
	switch {
	case plain:
		return p
	case !utf8.ValidString(p):
		return strconv.Quote(p)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteFile writes a whole file, creating parent directories.
type WriteFile struct{}

// Contract implements Tool.
func (WriteFile) Contract() Contract {
	return Contract{
		Name:        "write_file",
		Description: "Write the whole content of a file of the workspace, creating it (and its directories) if needed.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","content"],
"properties":{"path":{"type":"string","minLength":1},"content":{"type":"string","maxLength":1048576}}}`),
		Effect: events.EffectWrite, Approval: ApprovalNever, Timeout: 10 * time.Second,
		OutputCap: 4 << 10, Idempotent: true,
	}
}

// Run implements Tool.
func (WriteFile) Run(_ context.Context, env Env, raw json.RawMessage) Result {
	var a struct{ Path, Content string }
	_ = json.Unmarshal(raw, &a)
	abs, bad := resolve(env, a.Path)
	if bad != nil {
		return *bad
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return Fail(CodeIsDirectory, "%s is a directory", a.Path)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return fileError(a.Path, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(abs); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(abs, []byte(a.Content), mode); err != nil {
		return fileError(a.Path, err)
	}
	return Result{Output: "wrote " + a.Path}
}

// EditFile replaces one exact occurrence of a text in a file.
type EditFile struct{}

// Contract implements Tool.
func (EditFile) Contract() Contract {
	return Contract{
		Name:        "edit_file",
		Description: "Replace the exact text `old` with `new` in a file. `old` must occur exactly once.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","old","new"],
"properties":{"path":{"type":"string","minLength":1},"old":{"type":"string","minLength":1},"new":{"type":"string"}}}`),
		Effect: events.EffectWrite, Approval: ApprovalNever, Timeout: 10 * time.Second,
		OutputCap: 4 << 10, Idempotent: false,
	}
}

// Run implements Tool.
func (EditFile) Run(_ context.Context, env Env, raw json.RawMessage) Result {
	var a struct{ Path, Old, New string }
	_ = json.Unmarshal(raw, &a)
	abs, st, data, bad := existingFile(env, a.Path, "", -1)
	if bad != nil {
		return *bad
	}
	switch n := strings.Count(string(data), a.Old); n {
	case 0:
		return Fail(CodeEditNoMatch, "the text to replace does not occur in %s", a.Path)
	case 1:
	default:
		return Fail(CodeEditAmbiguous, "the text to replace occurs %d times in %s; include more context so it occurs once", n, a.Path)
	}
	out := strings.Replace(string(data), a.Old, a.New, 1)
	if err := os.WriteFile(abs, []byte(out), st.Mode().Perm()); err != nil {
		return fileError(a.Path, err)
	}
	return Result{Output: "edited " + a.Path}
}

// precheckPath refuses a call whose "path" argument resolves outside the
// workspace.
func precheckPath(env Env, raw json.RawMessage) *Result {
	var a struct{ Path string }
	_ = json.Unmarshal(raw, &a)
	if a.Path == "" {
		return nil
	}
	_, bad := resolve(env, a.Path)
	return bad
}

// Precheck implements Prechecker.
func (ReadFile) Precheck(env Env, raw json.RawMessage) *Result { return precheckPath(env, raw) }

// Precheck implements Prechecker.
func (ListFiles) Precheck(env Env, raw json.RawMessage) *Result { return precheckPath(env, raw) }

// Precheck implements Prechecker.
func (WriteFile) Precheck(env Env, raw json.RawMessage) *Result { return precheckPath(env, raw) }

// Precheck implements Prechecker.
func (EditFile) Precheck(env Env, raw json.RawMessage) *Result { return precheckPath(env, raw) }
