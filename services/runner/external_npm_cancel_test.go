package runner_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// processesWith lists the host's processes whose command line holds
// marker, with their real uids.
func processesWith(marker string) map[string]string {
	out := map[string]string{}
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid := filepath.Base(filepath.Dir(p))
		out[pid] = uidOf(pid)
	}
	return out
}

// uidOf is the real uid of process pid ("" when it is gone).
func uidOf(pid string) string {
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "Uid:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				return fields[0]
			}
		}
	}
	return ""
}

// processesOfUID lists the host's live processes whose real uid is uid,
// each with its stat line and command line. A zombie has exited: one the
// kill left is its parent's (or, its parent killed too, init's) to reap,
// and this host's init reaps when it gets to it.
func processesOfUID(uid string) []string {
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range paths {
		if uidOf(filepath.Base(p)) == uid {
			status, _ := os.ReadFile(filepath.Join(p, "stat"))
			if _, rest, ok := strings.Cut(string(status), ") "); ok && strings.HasPrefix(rest, "Z") {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			out = append(out, string(status)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// factline cancel ends a real npm agent mid-call: while its first call
// waits for the model, the cancel ends the run cancelled, and no process
// of the agent (node and whatever it started) nor of the attempt's uid is
// left.
func TestNpmAgentsCancelMidCallEndTheProcess(t *testing.T) {
	for _, g := range npmAgents {
		t.Run(g.name, func(t *testing.T) {
			e, _ := startWith(t)
			run := "npm-cancel-" + g.name
			marker := "marker-" + run + "-" + time.Now().Format("150405.000000000")
			tr := g.treatment(t)
			tr.Agent.Command[len(tr.Agent.Command)-1] += " " + marker
			tr.Model.ScriptFiles = map[string]string{"fix": "turns:\n  - text: thinking\n    delay: 120s\n"}
			p, err := fleettest.Publish(e.ctx, e.b, fixtureCase(t, "{steps: 10, wall: 5m}"), tr)
			must(t, err)
			must(t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
			must(t, fleettest.Await(e.ctx, e.b, "suite", run, func(l bus.RunLog) bool {
				return len(kinds(l, events.KindTurnStarted)) > 0
			}))
			procs := processesWith(marker)
			uid := ""
			for _, u := range procs {
				if u != "0" && u != "" {
					uid = u
				}
			}
			if len(procs) == 0 || uid == "" {
				t.Fatalf("no process of the agent running as the attempt's uid mid-call: %v", procs)
			}
			must(t, e.b.Controls().Send(e.ctx, "suite", run, events.Control{Signal: events.SignalCancel, Reason: "enough"}))
			_, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
			must(t, err)
			if end.Status != events.RunCancelled {
				t.Fatalf("ended %s (%s), want cancelled", end.Status, end.Reason)
			}
			if left := processesWith(marker); len(left) > 0 {
				t.Fatalf("the agent's processes outlived the cancel: %v", left)
			}
			if left := processesOfUID(uid); len(left) > 0 {
				t.Fatalf("processes of the attempt's uid %s outlived the cancel:\n%s", uid, strings.Join(left, "\n"))
			}
		})
	}
}
