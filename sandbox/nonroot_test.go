package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/factline/factline/events"
)

// probeChildEnv makes the test binary a child that probes and prints the
// record instead of running tests.
const probeChildEnv = "FACTLINE_SANDBOX_PROBE_CHILD"

// unprivilegedConfig is what the child of TestProbeAsUnprivilegedRunner
// asks for: every feature.
func unprivilegedConfig(dir string) Config {
	l := testLimits
	l.FileSize = 64 << 20
	return Config{Limits: l, Network: true, Unprivileged: true, PrivateTmp: true, ReadOnlyHost: true, PrivateProc: true, WorkDir: dir}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(loweredChildEnv); dir != "" {
		loweredChild(dir)
	}
	if dir := os.Getenv(siteChildEnv); dir != "" {
		siteChild(dir)
	}
	if dir := os.Getenv(probeChildEnv); dir != "" {
		c, err := Probe(context.Background(), unprivilegedConfig(dir))
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(3)
		}
		_ = json.NewEncoder(os.Stdout).Encode(c.Record())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A runner that is not root gets what the kernel gives an ordinary user:
// the process limit binds its own uid, and network isolation comes through
// a user namespace where the host allows one; whatever it cannot get is
// recorded unsupported. (Run as root, the test starts the probe as an
// unprivileged user; run as that user, it probes directly.)
func TestProbeAsUnprivilegedRunner(t *testing.T) {
	dir := reachableDir(t)
	// A copy of the test binary the unprivileged user may run (go test
	// builds it in a directory only its owner may enter).
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{probeChildEnv + "=" + dir, "PATH=" + os.Getenv("PATH")}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		// A runner's work dir is its own: the probe runs in a directory
		// it makes there, as attempts do.
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe as an unprivileged runner: %v: %s", err, stderrOf(err))
	}
	var rec events.Containment
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("unprivileged runner: %+v", rec)
	user, _ := rec.Feature(FeatureUser)
	procs, _ := rec.Feature(FeatureProcesses)
	if user.State != events.ContainmentActive {
		t.Errorf("an unprivileged runner's commands run as its own, unprivileged uid: %+v", user)
	}
	if procs.State != events.ContainmentActive || procs.Limit != testLimits.Processes {
		t.Errorf("the process limit binds a non-root uid: %+v", procs)
	}
	net, _ := rec.Feature(FeatureNetwork)
	if net.State != events.ContainmentActive && (net.State != events.ContainmentUnsupported || net.Detail == "") {
		t.Errorf("network_isolation: %+v", net)
	}
	// What needs root, or a uid per attempt, is said to be missing, and why.
	for _, name := range []string{FeaturePrivateTmp, FeatureReadOnlyHost, FeaturePrivateProc, FeatureWorkspace, FeatureLeftovers} {
		f, _ := rec.Feature(name)
		if f.State != events.ContainmentUnsupported || !strings.Contains(f.Detail, "uid") {
			t.Errorf("%s of a runner that is not root: %+v, want unsupported naming its uid", name, f)
		}
	}
	if f, _ := rec.Feature(FeatureFileSize); f.State != events.ContainmentActive || f.Limit != unprivilegedConfig("").Limits.FileSize {
		t.Errorf("the file-size limit binds any user: %+v", f)
	}
}

// stderrOf is what a child that failed wrote to its standard error.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
