package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks followed while resolving one path, like the
// kernel's own limit.
const maxLinks = 40

// Resolve turns a path a tool was given into an absolute path inside the
// root, following symlinks the way the kernel would, before the tool touches
// anything. Relative paths are taken from the root; an absolute path is
// accepted when it names a place under Root() (component by component, no
// cleaning first) and refused otherwise. Every existing component is
// resolved, symlinks included; components that do not exist yet (a file or
// directories to be created) are appended to the nearest existing parent.
//
// The result contains no symlink and no "." or "..". A path that would lead
// outside the root, by "..", as an absolute path or through a symlink whose
// target lies outside (even a dangling one), is refused with a *PathError
// matching ErrEscape; a malformed one (a NUL byte, a file used as a
// directory, a symlink loop) with ErrInvalidPath. The empty path is the
// root. Resolve only reads the tree; a tool must then use the returned path,
// not the one it was given.
func (w *Workspace) Resolve(p string) (string, error) { return resolve(w.root, p) }

// Resolve is Workspace.Resolve for a directory that is not an open
// Workspace: root must be an existing directory (symlinks in it are
// resolved first).
func Resolve(root, p string) (string, error) {
	real, err := realDir(root)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", p, err)
	}
	return resolve(real, p)
}

// component is one step of a path being resolved; via names the symlink
// whose target it came from, if any.
type component struct {
	name, via string
}

// resolve does the work of Resolve; root is absolute, clean and real.
func resolve(root, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", pathErr(p, ErrInvalidPath, "contains a NUL byte")
	}
	var names []string
	if filepath.IsAbs(p) {
		rest, ok := under(root, p)
		if !ok {
			return "", pathErr(p, ErrEscape, "absolute path outside the root %s", root)
		}
		names = rest
	} else {
		names = split(p)
	}
	queue := make([]component, len(names))
	for i, n := range names {
		queue[i] = component{name: n}
	}
	var stack []string // resolved components below root: real directories, or names that do not exist yet
	links := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c.name == ".." {
			if len(stack) == 0 {
				if c.via != "" {
					return "", pathErr(p, ErrEscape, "symlink %q points outside the root", c.via)
				}
				return "", pathErr(p, ErrEscape, "\"..\" climbs out of the root")
			}
			stack = stack[:len(stack)-1]
			continue
		}
		rel := strings.Join(append(stack[:len(stack):len(stack)], c.name), "/")
		abs := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Lstat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			stack = append(stack, c.name)
			continue
		case errors.Is(err, syscall.ENOTDIR):
			return "", pathErr(p, ErrInvalidPath, "a component of %q is not a directory", rel)
		case err != nil:
			return "", fmt.Errorf("resolve %q: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && len(queue) > 0 {
				return "", pathErr(p, ErrInvalidPath, "%q is not a directory", rel)
			}
			stack = append(stack, c.name)
			continue
		}
		if links++; links > maxLinks {
			return "", pathErr(p, ErrInvalidPath, "too many levels of symlinks (a symlink loop, or a chain of more than %d)", maxLinks)
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return "", fmt.Errorf("resolve %q: %w", p, err)
		}
		var tnames []string
		if filepath.IsAbs(target) {
			rest, ok := under(root, target)
			if !ok {
				return "", pathErr(p, ErrEscape, "symlink %q points outside the root (-> %q)", rel, target)
			}
			stack = stack[:0]
			tnames = rest
		} else {
			tnames = split(target)
		}
		expanded := make([]component, 0, len(tnames)+len(queue))
		for _, n := range tnames {
			expanded = append(expanded, component{name: n, via: rel})
		}
		queue = append(expanded, queue...)
	}
	return filepath.Join(root, filepath.FromSlash(strings.Join(stack, "/"))), nil
}

// under returns the components of the absolute path p below root, if p
// starts with exactly root's components. The rest may still hold "..".
func under(root, p string) ([]string, bool) {
	rc, pc := split(root), split(p)
	if len(pc) < len(rc) {
		return nil, false
	}
	for i := range rc {
		if pc[i] != rc[i] {
			return nil, false
		}
	}
	return pc[len(rc):], true
}

// split returns the components of a slash-separated path, without empty
// and "." components.
func split(p string) []string {
	var out []string
	for c := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
