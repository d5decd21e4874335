//go:build deploy

package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// engine is the container engine the tests drive (podman unless
// FACTLINE_CONTAINER_ENGINE names another).
func engine() string {
	if e := os.Getenv("FACTLINE_CONTAINER_ENGINE"); e != "" {
		return e
	}
	return "podman"
}

// root is the checkout's top directory, absolute: the compose file's
// relative mounts and the suite's case paths are resolved from it.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sh runs a command to its end and returns its combined output; the error
// carries the output.
func sh(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// must(t)(sh(...)) is sh's output, the test stopped if it failed.
func must(t *testing.T) func(string, error) string {
	return func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

var (
	imagesOnce sync.Once
	imagesErr  error
)

// buildImages builds the three images once per test binary, as make
// image does, tagged latest.
func buildImages(t *testing.T) {
	t.Helper()
	imagesOnce.Do(func() {
		// FACTLINE_DEPLOY_BUILT=1: the images make image built before
		// (when the checkout has not changed since, minutes saved).
		if os.Getenv("FACTLINE_DEPLOY_BUILT") == "1" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		_, imagesErr = sh(ctx, []string{"FACTLINE_CONTAINER_ENGINE=" + engine()}, filepath.Join(root(t), "deploy/build-images.sh"))
	})
	if imagesErr != nil {
		t.Fatalf("make image: %v", imagesErr)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// hostFactline is factline built for this machine: the submitter, which
// reaches the fleet through the ports published on 127.0.0.1.
func hostFactline(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		// The image's own binary, which make image leaves in its build
		// context: static, so it runs here too.
		if p := filepath.Join(root(t), "bin/deploy/factline/rootfs/usr/local/bin/factline"); exec.Command(p, "version").Run() == nil {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "factline-deploy-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "factline")
		if out, err := testutil.GoBuild(binPath, "../cmd/factline").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// freePorts are n TCP ports on 127.0.0.1 free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// writeSuite writes a suite of the demo's cases (each once per
// treatment) named name, with absolute case paths so that the same file
// reads the same on the host and in a container that mounts the
// checkout at its own path.
func writeSuite(t *testing.T, name string) string {
	t.Helper()
	demo := filepath.Join(root(t), "examples/demo")
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ncases:\n", name)
	for _, c := range []string{"fix-sum", "stuck-loop", "over-budget", "cheat", "read-only", "misread"} {
		fmt.Fprintf(&b, "  - {path: %s/cases/%s/case.yaml}\n", demo, c)
	}
	fmt.Fprintf(&b, "treatments:\n  - {path: %s/treatments/stall-on.yaml}\n  - {path: %s/treatments/stall-off.yaml}\ntrials: 1\n", demo, demo)
	fmt.Fprintf(&b, "inputs: {allow_outside: [%s]}\n", demo)
	dir := t.TempDir()
	// The image's user (10001) reads it through a mount.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// normalise drops what no two runs share (wall times) from a report, and
// names the suite name: two suites of one roster under two names report
// the same.
func normalise(t *testing.T, report, name string) string {
	t.Helper()
	return testutil.ReportWithoutWallTimes(t, bytes.ReplaceAll([]byte(report), []byte(name), []byte("SUITE")))
}

// referenceReport is the suite's report from one factline process in the
// image, on an embedded store: the fault-free answer, from the same
// binary under the same containment as the fleet's runners.
func referenceReport(t *testing.T, ctx context.Context, suite string) string {
	t.Helper()
	r := root(t)
	out, err := exec.CommandContext(ctx, engine(), "run", "--rm", "--network", "none",
		"-v", r+":"+r+":ro", "-v", filepath.Dir(suite)+":"+filepath.Dir(suite)+":ro",
		"localhost/factline:latest", "run", suite, "--store", "/tmp/store", "--json").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the reference run in one container: %v\n%s", err, stderr)
	}
	return string(out)
}

// TestMain gives every podman the tests start (podman-compose's too)
// testdata/containers.conf's rlimits, unless CONTAINERS_CONF names
// another file.
func TestMain(m *testing.M) {
	if os.Getenv("CONTAINERS_CONF") == "" {
		if p, err := filepath.Abs("testdata/containers.conf"); err == nil {
			os.Setenv("CONTAINERS_CONF", p)
		}
	}
	os.Exit(m.Run())
}
