package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkOutputs finds, before the suite is submitted, a --junit file or an
// --out directory run could not write after it: a CI job would otherwise
// run the whole suite, print its report, and exit 1 with its JUnit lost
// and its gates unread. A missing --junit file is fine (it is made after
// the run); its directory must exist and take a new file. --out's
// directory is made now, as it would be after the run.
func (o *runOptions) checkOutputs() error {
	if o.gates.junit != "" {
		if err := checkWritableFile(o.gates.junit); err != nil {
			return fileError{fmt.Errorf("--junit %s: %w", o.gates.junit, err)}
		}
	}
	if o.outDir != "" {
		if err := os.MkdirAll(o.outDir, 0o755); err != nil {
			return fileError{fmt.Errorf("--out %s: %w", o.outDir, err)}
		}
	}
	return nil
}

// checkWritableFile says why a file could not be created or replaced at
// path: a directory there, or a directory it cannot be made in. It leaves
// no file behind.
func checkWritableFile(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("is a directory, not a file")
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("its directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("its directory %s is no directory", dir)
	}
	f, err := os.CreateTemp(dir, ".factline-write-check-*")
	if err != nil {
		return fmt.Errorf("no file can be made in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
