package cases

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/factline/factline/models/scripted"
)

// Confine decides which files loading may read: given a path (as joined
// from the file that names it) it returns the path to read — the real
// path, with every symlink followed — or an error saying why it may not be
// read. A suite confines its inputs to its own directory (docs/security.md);
// a nil Confine reads anything.
type Confine func(path string) (string, error)

// resolve applies c to path; a nil c only cleans it.
func (c Confine) resolve(path string) (string, error) {
	if c == nil {
		return filepath.Clean(path), nil
	}
	return c(path)
}

// LoadCase reads and checks a case file. Relative fixture paths are
// resolved against the file's directory.
func LoadCase(path string) (*Case, error) { return LoadCaseWithin(path, nil) }

// LoadCaseWithin is LoadCase reading only what confine allows: the case file
// and its fixture directory. The fixture is set to the path confine
// returned.
func LoadCaseWithin(path string, confine Confine) (*Case, error) {
	real, err := confine.resolve(path)
	if err != nil {
		return nil, fmt.Errorf("case: %w", err)
	}
	data, err := readInputAs(path, real, MaxFileBytes, "a case file")
	if err != nil {
		return nil, fmt.Errorf("case: %w", err)
	}
	return ParseCaseAt(path, filepath.Dir(path), data, confine)
}

// ParseCaseAt parses case YAML that was not read from a file of its own (a
// case rendered from a dataset record): name is used in errors, and a
// relative fixture resolves against dir, read only where confine allows.
func ParseCaseAt(name, dir string, data []byte, confine Confine) (*Case, error) {
	c, err := ParseCase(name, data)
	if err != nil {
		return nil, err
	}
	if c.Fixture == "" {
		return c, nil
	}
	fixture := c.Fixture
	if !filepath.IsAbs(fixture) {
		fixture = filepath.Join(dir, fixture)
	}
	if st, err := os.Stat(fixture); err != nil || !st.IsDir() {
		why := "is not a directory"
		if err == nil && st.Mode().IsRegular() {
			why = "is a file, not a directory"
		}
		// Named as written and as resolved (absolute: the joined path is
		// relative to wherever factline runs, not to anything the author
		// wrote), with what is wrong with it.
		shown := fixture
		if abs, err := filepath.Abs(fixture); err == nil {
			shown = abs
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			why = "does not exist"
		case err != nil:
			why = fmt.Sprintf("cannot be read: %v", err)
		}
		return nil, &Error{File: name, Line: fieldLine(data, "fixture"), Field: "fixture", Msg: fmt.Sprintf("%q (%s) %s", c.Fixture, shown, why)}
	}
	if c.Fixture, err = confine.resolve(fixture); err != nil {
		return nil, &Error{File: name, Field: "fixture", Msg: err.Error()}
	}
	return c, nil
}

// LoadTreatment reads a treatment file; scripted treatments read their
// scripts directory too.
func LoadTreatment(path string) (*Treatment, error) { return LoadTreatmentWithin(path, nil) }

// LoadTreatmentWithin is LoadTreatment reading only what confine allows:
// the treatment file, its scripts directory and every script in it.
func LoadTreatmentWithin(path string, confine Confine) (*Treatment, error) {
	real, err := confine.resolve(path)
	if err != nil {
		return nil, fmt.Errorf("treatment: %w", err)
	}
	data, err := readInputAs(path, real, MaxFileBytes, "a treatment file")
	if err != nil {
		return nil, fmt.Errorf("treatment: %w", err)
	}
	t, err := ParseTreatment(path, data)
	if err != nil {
		return nil, err
	}
	if t.Model.Provider == ProviderScripted {
		if err := t.loadScripts(path, confine); err != nil {
			return nil, err
		}
	}
	if err := t.Agent.resolve(path); err != nil {
		return nil, err
	}
	if err := t.loadPrompt(path, confine); err != nil {
		return nil, err
	}
	return t, nil
}

// loadPrompt reads a scaffold's prompt_file into its prompt, so that the
// text travels with the treatment: a runner, and a runner taking a run
// over, render what was loaded, never the file as it is later.
func (t *Treatment) loadPrompt(path string, confine Confine) error {
	if t.Scaffold == nil || t.Scaffold.PromptFile == "" {
		return nil
	}
	file := t.Scaffold.PromptFile
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(path), file)
	}
	real, err := confine.resolve(file)
	if err != nil {
		return &Error{File: path, Field: "scaffold.prompt_file", Msg: err.Error()}
	}
	b, err := readInputAs(file, real, MaxPromptBytes, "a prompt file")
	if err != nil {
		return &Error{File: path, Field: "scaffold.prompt_file", Msg: err.Error()}
	}
	t.Scaffold.Prompt = string(b)
	if err := t.Scaffold.checkPrompt("scaffold.prompt_file", t.ID); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = path
		}
		return err
	}
	return nil
}

// loadScripts reads and checks every <case-id>.yaml of a scripted
// treatment's scripts directory.
func (t *Treatment) loadScripts(path string, confine Confine) error {
	dir := t.Model.Scripts
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(path), dir)
	}
	realDir, err := confine.resolve(dir)
	if err != nil {
		return &Error{File: path, Field: "model.scripts", Msg: err.Error()}
	}
	files, err := filepath.Glob(filepath.Join(realDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return &Error{File: path, Field: "model.scripts", Msg: fmt.Sprintf("no <case-id>.yaml scripts in %s", dir)}
	}
	if len(files) > MaxScripts {
		return &Error{File: path, Field: "model.scripts", Msg: fmt.Sprintf("%s holds %d scripts; a treatment has at most %d", dir, len(files), MaxScripts)}
	}
	t.Model.ScriptFiles = map[string]string{}
	total := 0
	for _, f := range files {
		// Named as the author wrote the directory; read where it really
		// is, which a script that is a symlink must not leave.
		name := filepath.Join(dir, filepath.Base(f))
		real, err := confine.resolve(f)
		if err != nil {
			return &Error{File: path, Field: "model.scripts", Msg: err.Error()}
		}
		b, err := readInputAs(name, real, MaxScriptBytes, "a script")
		if err != nil {
			return &Error{File: path, Field: "model.scripts", Msg: err.Error()}
		}
		if total += len(b); total > MaxScriptsBytes {
			return &Error{File: path, Field: "model.scripts",
				Msg: fmt.Sprintf("the scripts in %s hold more than %d bytes together, the limit for one treatment", dir, MaxScriptsBytes)}
		}
		// A script is an input file like any other: checked now, so that a
		// mistake is a usage error naming the file, not a run that ends
		// errored after the suite name is spent.
		if _, err := scripted.Parse(name, b); err != nil {
			return &Error{File: path, Field: "model.scripts", Msg: err.Error()}
		}
		id := filepath.Base(f)
		t.Model.ScriptFiles[id[:len(id)-len(".yaml")]] = string(b)
	}
	return nil
}

// ReadInput reads an input file of at most max bytes; what names the kind
// of file in the error ("a case file"). The size is checked before the
// file is read, and again while it is read (it may grow), so an oversized
// input never costs more than max in memory.
func ReadInput(path string, max int64, what string) ([]byte, error) {
	return readInputAs(path, path, max, what)
}

// readInputAs is ReadInput of the file at real, named shown in its errors:
// the path as the suite's author wrote it, not the absolute one the
// confinement resolved it to, so the message names the file the way every
// other error of the suite does.
func readInputAs(shown, real string, max int64, what string) ([]byte, error) {
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", shown)
	}
	tooBig := func(n int64) error {
		return fmt.Errorf("%s: %d bytes; the limit for %s is %d bytes", shown, n, what, max)
	}
	if st.Size() > max {
		return nil, tooBig(st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooBig(int64(len(data)))
	}
	return data, nil
}
