package testutil

import "os/exec"

// GoBuild returns the command that builds the Go package pkg into the
// executable out the way go test builds the test binary itself: with no
// version control stamp. The harness component of an agent's identity
// holds the build's revision (version.Build), and go test never stamps a
// test binary; a factline binary stamped on a fresh clone was therefore a
// different agent from the same code running in the test binary, and the
// tests comparing a fleet of processes with one in process failed on
// every machine whose Go did not happen to set -buildvcs=false.
func GoBuild(out, pkg string) *exec.Cmd {
	return exec.Command("go", "build", "-buildvcs=false", "-o", out, pkg)
}
