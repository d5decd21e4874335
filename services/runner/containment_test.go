package runner_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/services/runner"
)

// run.claimed records the containment the runner's commands get, and a
// command of the run sees exactly the recorded limits, as a user that is
// not root exactly when the record says so.
func TestRunClaimedRecordsContainment(t *testing.T) {
	t.Parallel()
	limits := sandbox.Limits{CPUSeconds: 120, AddressSpace: 2 << 30, OpenFiles: 256, Processes: 128}
	e, _ := startWith(t, runner.WithContainment(sandbox.Config{Limits: limits, Network: true, Unprivileged: true}))
	script := `turns:
  - calls:
      - {id: look, name: run_command, args: {command: "ulimit -t; ulimit -v; ulimit -n; ulimit -u; id -u"}}
`
	log, _ := e.run(fixtureCase(t, "{steps: 3}"), script, "contained")
	claims := kinds(log, events.KindRunClaimed)
	if len(claims) != 1 {
		t.Fatalf("%d claims", len(claims))
	}
	claim := claims[0].Body.(events.RunClaimed)
	if claim.Containment != nil || claim.ContainmentDigest == "" {
		t.Fatalf("run.claimed holds its containment record, not the digest of its blob: %+v", claim)
	}
	rec := e.claimedContainment(claims[0])
	if rec == nil || rec.Provider != "process" {
		t.Fatalf("run.claimed records no containment: %+v", claims[0].Body)
	}
	var obs struct {
		Output string `json:"output"`
	}
	d := kinds(log, events.KindDispatchComplete)[0].Body.(events.DispatchCompleted)
	if d.Error != nil {
		t.Fatalf("the command failed: %+v %s", d.Error, d.Output)
	}
	must(t, jsonUnmarshal(d.Output, &obs))
	seen := strings.Fields(obs.Output)
	if len(seen) != 5 {
		t.Fatalf("command output %q", obs.Output)
	}
	for i, c := range []struct {
		name  string
		asked uint64
		scale uint64
	}{
		{sandbox.FeatureCPU, limits.CPUSeconds, 1},
		{sandbox.FeatureAddressSpace, limits.AddressSpace, 1024},
		{sandbox.FeatureOpenFiles, limits.OpenFiles, 1},
	} {
		f, ok := rec.Feature(c.name)
		if !ok {
			t.Fatalf("no %s in %+v", c.name, rec)
		}
		n, _ := strconv.ParseUint(seen[i], 10, 64)
		switch f.State {
		case events.ContainmentActive:
			if f.Limit != c.asked || n*c.scale != c.asked {
				t.Errorf("%s: recorded %d, asked %d, the command sees %s", c.name, f.Limit, c.asked, seen[i])
			}
		case events.ContainmentUnsupported:
			if f.Detail == "" {
				t.Errorf("%s unsupported without a reason", c.name)
			}
		default:
			t.Errorf("%s: state %s", c.name, f.State)
		}
	}
	uid, _ := strconv.Atoi(seen[4])
	user, _ := rec.Feature(sandbox.FeatureUser)
	procs, _ := rec.Feature(sandbox.FeatureProcesses)
	if (user.State == events.ContainmentActive) != (uid != 0) {
		t.Errorf("unprivileged_user %s but the command ran as uid %d", user.State, uid)
	}
	if procs.State == events.ContainmentActive && (uid == 0 || seen[3] != strconv.FormatUint(limits.Processes, 10)) {
		t.Errorf("processes active at %d, the command ran as uid %d with ulimit -u %s", procs.Limit, uid, seen[3])
	}
	if uid == 0 && procs.State != events.ContainmentUnsupported {
		t.Errorf("commands run as root, yet processes is %s", procs.State)
	}
	if net, _ := rec.Feature(sandbox.FeatureNetwork); net.State != events.ContainmentActive && net.State != events.ContainmentUnsupported {
		t.Errorf("network_isolation was asked for: %+v", net)
	}
}

// By default a run's commands get TMPDIR, TMP and TEMP in the attempt's
// own directory, and as root a /tmp of their own: what one writes there
// never reaches the host, and run.claimed says so. The attempt's directory
// in the work dir is named after the runner's process.
func TestCommandsWriteTheirOwnTmp(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	name := "factline-runner-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	script := `turns:
  - calls:
      - {id: tmp, name: run_command, args: {command: "echo x > /tmp/` + name + ` && echo \"$TMPDIR|$TMP|$TEMP\""}}
`
	log, _ := e.run(fixtureCase(t, "{steps: 3}"), script, "own-tmp")
	_, err := os.Lstat(filepath.Join("/tmp", name))
	if err == nil {
		t.Cleanup(func() { _ = os.Remove(filepath.Join("/tmp", name)) })
	}
	rec := e.claimedContainment(kinds(log, events.KindRunClaimed)[0])
	tmp, _ := rec.Feature(sandbox.FeaturePrivateTmp)
	if os.Geteuid() != 0 {
		if tmp.State != events.ContainmentUnsupported {
			t.Fatalf("not root, yet private_tmp is %+v", tmp)
		}
		t.Skipf("a private /tmp needs root and the test runs as uid %d; run.claimed says so: %s", os.Geteuid(), tmp.Detail)
	}
	if tmp.State != events.ContainmentActive || tmp.Limit != sandbox.DefaultTmpSize {
		t.Errorf("private_tmp: %+v", tmp)
	}
	if err == nil {
		t.Errorf("/tmp/%s, written by the run's command, is on the host", name)
	}
	d := kinds(log, events.KindDispatchComplete)[0].Body.(events.DispatchCompleted)
	var obs struct {
		Output string `json:"output"`
	}
	must(t, jsonUnmarshal(d.Output, &obs))
	dirs := strings.Split(strings.TrimSpace(obs.Output), "|")
	if d.Error != nil || len(dirs) != 3 || dirs[0] != dirs[1] || dirs[0] != dirs[2] ||
		!strings.HasPrefix(dirs[0], e.work+"/factline-runner.") || !strings.HasSuffix(dirs[0], "/tmp") {
		t.Errorf("TMPDIR|TMP|TEMP = %q (%+v), want one directory in the attempt's below %s", obs.Output, d.Error, e.work)
	}
}

// A runner's containment record is the same for every run it claims: each
// claim names it by the digest of one blob instead of holding it (~1,300
// bytes a claim), and the blob reads back as the record.
func TestARunnersClaimsNameOneContainmentBlob(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t, runner.WithContainment(sandbox.Config{Network: true, Unprivileged: true}))
	script := "turns:\n  - text: done\n"
	var digests []events.Digest
	for _, name := range []string{"first", "second"} {
		log, _ := e.run(fixtureCase(t, "{steps: 3}"), script, name)
		claims := kinds(log, events.KindRunClaimed)
		if len(claims) != 1 {
			t.Fatalf("%s: %d claims", name, len(claims))
		}
		claim := claims[0].Body.(events.RunClaimed)
		if claim.Containment != nil || claim.ContainmentDigest == "" {
			t.Fatalf("%s: the claim holds %+v, want the digest of its containment's blob", name, claim)
		}
		digests = append(digests, claim.ContainmentDigest)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two claims of one runner name %s and %s", digests[0], digests[1])
	}
	data, err := e.b.Blobs().Get(e.ctx, digests[0])
	if err != nil {
		t.Fatal(err)
	}
	rec, err := events.DecodeContainmentBlob(data, digests[0])
	if err != nil || rec.Provider != "process" || len(rec.Features) == 0 {
		t.Fatalf("the blob reads as %+v, %v", rec, err)
	}
}
