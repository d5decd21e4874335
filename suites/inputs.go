package suites

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Inputs says where a suite's input files may come from besides the suite
// file's own directory.
type Inputs struct {
	// AllowOutside lists directories (relative to the suite file, or
	// absolute) outside the suite's directory that its cases, fixtures,
	// treatments and scripts may also come from. The submitter uploads
	// what it reads into a blob store every role can read, so only the
	// suite file's author widens it, by name, directory by directory.
	AllowOutside []string `yaml:"allow_outside,omitempty" json:"allow_outside,omitempty"`
}

// ErrOutside is why an input outside the suite's allowed directories is
// refused.
var ErrOutside = errors.New("outside the suite's directory")

// inputRoots are the real directories a suite's inputs may resolve into.
type inputRoots struct {
	base  string   // the suite file's directory, as given (for messages)
	roots []string // real paths; roots[0] is the suite's directory
}

// newInputRoots resolves the suite's directory and the directories its
// file allows.
func newInputRoots(suitePath string, f *File) (*inputRoots, error) {
	base := filepath.Dir(suitePath)
	home, err := realPath(base)
	if err != nil {
		return nil, &Error{File: suitePath, Msg: fmt.Sprintf("the suite's directory: %v", err)}
	}
	r := &inputRoots{base: base, roots: []string{home}}
	for i, d := range f.Inputs.AllowOutside {
		field := fmt.Sprintf("inputs.allow_outside[%d]", i)
		if !filepath.IsAbs(d) {
			d = filepath.Join(base, d)
		}
		real, err := realPath(d)
		if err != nil {
			return nil, &Error{File: suitePath, Field: field, Msg: err.Error()}
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, &Error{File: suitePath, Field: field, Msg: fmt.Sprintf("%s is not a directory", d)}
		}
		r.roots = append(r.roots, real)
	}
	return r, nil
}

// confine is the cases.Confine of a suite: a path is read only when its
// real path lies inside one of the roots.
func (r *inputRoots) confine(p string) (string, error) {
	real, err := realPath(p)
	if err != nil {
		// Resolving names the absolute directory where it stopped
		// ("lstat /abs/cases/nope"); the author wrote p.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s: %w", p, pe.Err)
		}
		return "", err
	}
	for _, root := range r.roots {
		if within(root, real) {
			return real, nil
		}
	}
	shown := fmt.Sprintf("%q", p)
	if real != filepath.Clean(p) {
		shown += " resolves to " + real + " and"
	}
	return "", fmt.Errorf("%s is %w %s (list a directory under inputs.allow_outside in the suite file to allow it)",
		shown, ErrOutside, r.roots[0])
}

// realPath is the absolute path of p with every symlink followed.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// within reports whether the real path p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
