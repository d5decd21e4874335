// Package scripts tests the shell scripts beside it: scripts/test-deps,
// which brings what 'make test' needs, and scripts/fresh-check.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/factline/factline/sandbox/sandboxtest"
)

// missingHere is each tool test-deps looks up on PATH, with the package
// that brings it: a PATH of a directory holding only bash, id and apt-get
// lacks every one.
var missingHere = map[string]string{
	"gcc":            "gcc libc6-dev",
	"git":            "git",
	"ps":             "procps",
	"promtool":       "prometheus",
	"chromium":       "chromium",
	"xmllint":        "libxml2-utils",
	"podman":         "podman",
	"podman-compose": "podman-compose",
	"runc":           "runc",
}

// barePath is a directory with only bash, id and apt-get: a machine with
// none of the tools the tests need, on which apt-get could install them.
func barePath(t *testing.T) string {
	t.Helper()
	dir := sandboxtest.ReachableDir(t)
	for _, tool := range []string{"bash", "id", "apt-get"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is needed to run test-deps as on a bare machine: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testDeps runs a copy of test-deps (one every user may run) with PATH
// set to path, as uid when it is not 0, and returns its exit code and
// output.
func testDeps(t *testing.T, path string, uid uint32, args ...string) (int, string) {
	t.Helper()
	src, err := os.ReadFile("test-deps")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(sandboxtest.ReachableDir(t), "test-deps")
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, args...)
	cmd.Env = []string{"PATH=" + path, "HOME=/nonexistent"}
	cmd.Dir = filepath.Dir(script)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatalf("test-deps: %v", err)
	}
	return 0, string(out)
}

// assertStops checks that test-deps stopped, naming each missing tool
// with its package, and the apt-get line that installs them all.
func assertStops(t *testing.T, code int, out string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("test-deps exited 0 on a machine without the tools:\n%s", out)
	}
	install := regexp.MustCompile(`(?m)^\s*apt-get install -y --no-install-recommends (.*)$`).FindStringSubmatch(out)
	if install == nil {
		t.Fatalf("test-deps does not say how to install what is missing:\n%s", out)
	}
	pkgs := strings.Fields(install[1])
	for tool, pkg := range missingHere {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(tool) + `\b.*Debian packages? ` + regexp.QuoteMeta(pkg) + `: \S`).MatchString(out) {
			t.Errorf("test-deps does not name %s, its package %s and what it is for:\n%s", tool, pkg, out)
		}
		for _, p := range strings.Fields(pkg) {
			if !containsString(pkgs, p) {
				t.Errorf("the install line %q lacks %s (for %s)", install[0], p, tool)
			}
		}
	}
	if strings.Contains(out, "installing") {
		t.Errorf("test-deps tried to install:\n%s", out)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// On a machine without the tools, test-deps --check stops at once, naming
// each missing tool, the Debian package that brings it and what the tests
// need it for, and the one apt-get line that installs them.
func TestTestDepsNamesEachMissingToolAndItsInstall(t *testing.T) {
	code, out := testDeps(t, barePath(t), 0, "--check")
	assertStops(t, code, out)
}

// Not root and no sudo that asks no password: test-deps may not install,
// so it stops the same way (and never asks for a password).
func TestTestDepsStopsWhereItMayNotInstall(t *testing.T) {
	uid := uint32(0)
	if os.Geteuid() == 0 {
		uid = 65534 // nobody: not root, and the bare PATH has no sudo
	}
	code, out := testDeps(t, barePath(t), uid)
	assertStops(t, code, out)
}

// Where everything is installed test-deps says nothing and exits 0 (this
// machine runs make test, so it has them).
func TestTestDepsIsQuietWhenNothingIsMissing(t *testing.T) {
	code, out := testDeps(t, os.Getenv("PATH"), 0, "--check")
	if code != 0 || out != "" {
		t.Fatalf("test-deps --check on this machine: exit %d\n%s", code, out)
	}
}

// make test runs test-deps before anything else: a missing tool stops it
// before vet and before any test.
func TestMakeTestRunsTestDepsFirst(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is needed to read the Makefile's test target: %v", err)
	}
	// Run under make test itself, a sub-make would inherit its level and
	// flags and print "Entering directory" first: read the Makefile as a
	// top-level make does.
	cmd := exec.Command(mk, "-n", "--no-print-directory", "test")
	cmd.Dir = ".."
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MAKELEVEL" && k != "MFLAGS" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n test: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "scripts/test-deps" {
		t.Fatalf("make test does not start with scripts/test-deps:\n%s", out)
	}
	if !strings.Contains(string(out), "go test -race") {
		t.Errorf("make test runs no tests:\n%s", out)
	}
}

// CI has no install logic of its own: .ci/run runs test-deps, then make
// test.
func TestCIRunsTestDepsThenMakeTest(t *testing.T) {
	b, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	deps, mk := strings.Index(s, "\nscripts/test-deps\n"), strings.Index(s, "\nmake test\n")
	if deps < 0 || mk < 0 || deps > mk {
		t.Errorf(".ci/run does not run scripts/test-deps, then make test:\n%s", s)
	}
	if strings.Contains(s, "apt-get") {
		t.Errorf(".ci/run installs packages itself; that is test-deps' job:\n%s", s)
	}
}

// README.md names every package test-deps may install, and what it is
// for (a row of its table each).
func TestReadmeListsWhatTestDepsInstalls(t *testing.T) {
	script, err := os.ReadFile("test-deps")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	adds := regexp.MustCompile(`add (?:"[^"]*"|\S+) "?([a-z0-9. -]+?)"? "`).FindAllStringSubmatch(string(script), -1)
	if len(adds) < 8 {
		t.Fatalf("found %d packages in test-deps: the test no longer reads it", len(adds))
	}
	for _, a := range adds {
		for _, pkg := range strings.Fields(a[1]) {
			if !regexp.MustCompile("(?m)^\\|[^|\\n]*`" + regexp.QuoteMeta(pkg) + "`[^|\\n]*\\|[^|\\n]*\\w").Match(readme) {
				t.Errorf("README.md has no table row naming the package %s and what it is for", pkg)
			}
		}
	}
}

// Both scripts are valid bash.
func TestScriptsParse(t *testing.T) {
	for _, s := range []string{"test-deps", "fresh-check", "../.ci/run"} {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}
