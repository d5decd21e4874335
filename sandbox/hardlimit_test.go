package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// loweredChildEnv makes the test binary a child that lowers its own hard
// limit of open files below what it asks for (loweredOpenFiles), probes,
// runs one contained command and prints both instead of running tests.
const loweredChildEnv = "FACTLINE_SANDBOX_LOWERED_CHILD"

// loweredOpenFiles is the child's hard limit of open files: below
// testLimits.OpenFiles, so that limit cannot be set.
const loweredOpenFiles = 48

// loweredReport is what the child prints.
type loweredReport struct {
	Record events.Containment `json:"record"`
	// Seen is what a contained command reads from inside: ulimit -t, -v,
	// -n and -u, then whether a 512 MiB allocation failed.
	Seen []string `json:"seen"`
}

// loweredChild is the runner of TestOneLimitTheHostRefusesLeavesTheOthers:
// a service whose host lowered one hard limit, and which cannot raise it
// again (a root without CAP_SYS_RESOURCE, as in a default container, or
// any ordinary user).
func loweredChild(dir string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	if err := dropResourceCapability(); err != nil {
		fail("drop CAP_SYS_RESOURCE: %v", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: loweredOpenFiles, Max: loweredOpenFiles}); err != nil {
		fail("lower the hard limit of open files: %v", err)
	}
	c, err := Probe(context.Background(), Config{Limits: testLimits, Unprivileged: true, WorkDir: dir})
	if err != nil {
		fail("probe: %v", err)
	}
	ws := dir + "/ws"
	if err := os.Mkdir(ws, 0o755); err != nil {
		fail("%v", err)
	}
	sb := c.ForAttempt(ws)
	res, err := sb.Run(context.Background(), Command{Dir: ws, Env: []string{"PATH=" + os.Getenv("PATH")}, Timeout: time.Minute, OutputCap: 4096,
		Script: `ulimit -t; ulimit -v; ulimit -n; ulimit -u; if dd if=/dev/zero of=/dev/null bs=512M count=1 2>/dev/null; then echo allocated; else echo refused; fi`})
	if err != nil || res.TimedOut || res.ExitCode != 0 {
		fail("contained command: %v %+v", err, res)
	}
	_ = json.NewEncoder(os.Stdout).Encode(loweredReport{Record: *c.Record(), Seen: strings.Fields(res.Output)})
	os.Exit(0)
}

// A host that lowered one hard limit below what the service asks for
// (here open files; in the field a runner started under ulimit -v) costs
// that one limit, recorded unsupported with the reason, and nothing else:
// a contained command still runs under the CPU, address-space and process
// limits, and a 512 MiB allocation still fails.
func TestOneLimitTheHostRefusesLeavesTheOthers(t *testing.T) {
	dir := reachableDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{loweredChildEnv + "=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the child runner: %v: %s", err, stderr)
	}
	var rep loweredReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("under a hard limit of %d open files: %+v; the command sees %v", loweredOpenFiles, rep.Record, rep.Seen)

	files, _ := rep.Record.Feature(FeatureOpenFiles)
	if files.State != events.ContainmentUnsupported || files.Limit != 0 ||
		!strings.Contains(files.Detail, "open files") || !strings.Contains(files.Detail, strconv.Itoa(loweredOpenFiles)) {
		t.Errorf("open_files: %+v, want unsupported, naming the limit and the host's %d", files, loweredOpenFiles)
	}
	for name, want := range map[string]uint64{FeatureCPU: testLimits.CPUSeconds, FeatureAddressSpace: testLimits.AddressSpace, FeatureProcesses: testLimits.Processes} {
		if f, _ := rep.Record.Feature(name); f.State != events.ContainmentActive || f.Limit != want {
			t.Errorf("%s: %+v, want active at %d: a limit the host refuses must not take the others with it", name, f, want)
		}
	}
	if len(rep.Seen) != 5 {
		t.Fatalf("the command printed %v", rep.Seen)
	}
	want := []string{strconv.FormatUint(testLimits.CPUSeconds, 10), strconv.FormatUint(testLimits.AddressSpace/1024, 10),
		strconv.Itoa(loweredOpenFiles), strconv.FormatUint(testLimits.Processes, 10), "refused"}
	for i, what := range []string{"ulimit -t", "ulimit -v", "ulimit -n", "ulimit -u", "a 512 MiB allocation"} {
		if rep.Seen[i] != want[i] {
			t.Errorf("%s inside the command: %s, want %s", what, rep.Seen[i], want[i])
		}
	}
}
