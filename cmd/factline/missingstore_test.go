package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// storeReaders are the commands that only read (or append to) a log that
// must already be there, with the arguments that get each past its usage
// checks; storeMakers are those a --store DIR may start a new store for.
// Every command with --store is in one of them, so a new command has to
// say which it is, and docs/cli.md names every reader.
var (
	storeReaders = map[string][]string{
		"report":       {"report", "demo"},
		"compare":      {"compare", "a", "b"},
		"regrade":      {"regrade", "demo", "--grading", "{grading}"},
		"retry":        {"retry", "demo"},
		"whatif":       {"whatif", "--policy", "../../examples/calibration/policies/patient.yaml"},
		"view":         {"view", "--listen", "127.0.0.1:0"},
		"tail":         {"tail", "--no-follow", "--since", "start"},
		"replay":       {"replay", "runs"},
		"trace":        {"trace", "--otlp-endpoint", "http://127.0.0.1:1"},
		"export":       {"export"},
		"audit":        {"audit"},
		"cancel":       {"cancel", "some-run"},
		"steer":        {"steer", "some-run", "do it"},
		"approve":      {"approve", "some-run", "op-1", "--args-digest", "sha256:" + strings.Repeat("0", 64)},
		"reject":       {"reject", "some-run", "op-1"},
		"resolve":      {"resolve", "some-run", "op-1", "--applied"},
		"suite pause":  {"suite", "pause", "demo"},
		"suite resume": {"suite", "resume", "demo"},
		"suite drain":  {"suite", "drain", "demo"},
		"suite cancel": {"suite", "cancel", "demo"},
	}
	storeMakers = map[string]bool{"run": true, "serve": true, "import": true, "demo": true, "setup": true}
)

// storeCommands names every command (and subcommand) that takes --store.
func storeCommands(c *cobra.Command, prefix string, into map[string]bool) {
	for _, sub := range c.Commands() {
		name := strings.TrimSpace(prefix + " " + sub.Name())
		if sub.Flags().Lookup("store") != nil {
			into[name] = true
		}
		storeCommands(sub, name, into)
	}
}

// Every command that reads the log refuses a --store path that holds no
// store (a typo), exit 1 naming the path, instead of creating an empty
// store there and reporting nothing.
func TestEveryReaderRefusesAMissingStore(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	storeCommands(newRoot(), "", have)
	for name := range have {
		if _, ok := storeReaders[name]; !ok && !storeMakers[name] {
			t.Errorf("%s takes --store but is neither a reader nor a maker here: say which", name)
		}
	}
	for name, args := range storeReaders {
		if !have[name] {
			t.Errorf("%s is listed as a reader but takes no --store", name)
			continue
		}
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			missing := filepath.Join(dir, "no-such-store")
			grading := filepath.Join(dir, "grading.yaml")
			if err := os.WriteFile(grading, []byte("instruments:\n  - {id: tests, kind: command, version: \"2\", command: \"true\"}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var argv []string
			for _, a := range args {
				argv = append(argv, strings.ReplaceAll(a, "{grading}", grading))
			}
			code, _, errOut := runCLI(t, append(argv, "--store", missing)...)
			if code != 1 || !strings.Contains(errOut, "no store at "+missing) {
				t.Errorf("factline %s on a missing store: exit %d, %q", strings.Join(args, " "), code, errOut)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Errorf("factline %s created the store it was pointed at", name)
			}
		})
	}
}

// docs/cli.md's list of the commands that refuse a missing store names
// every one that does, and none that does not.
func TestTheCLIDocListsEveryReaderOfAnExistingStore(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)Commands that\s+only read[^(]*\(([^)]*)\)\s+refuse a ` + "`--store`").FindStringSubmatch(string(doc))
	if m == nil {
		t.Fatal("docs/cli.md has no list of the commands that refuse a --store holding no store")
	}
	listed := map[string]bool{}
	for _, n := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(m[1], -1) {
		listed[n[1]] = true
	}
	want := map[string]bool{}
	for name := range storeReaders {
		top, _, _ := strings.Cut(name, " ")
		if !controlCommand(top) {
			want[top] = true
		}
	}
	var missing []string
	for name := range want {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/cli.md's list of the commands that refuse a missing store leaves out %v", missing)
	}
	for name := range listed {
		if !want[name] {
			t.Errorf("docs/cli.md lists %s as refusing a missing store, but it is no reader", name)
		}
	}
	if !strings.Contains(m[1], "control") {
		t.Error("docs/cli.md's list no longer names the control commands")
	}
}

// controlCommand reports whether name is one of the commands docs/cli.md
// groups as the control commands.
func controlCommand(name string) bool {
	switch name {
	case "cancel", "steer", "approve", "reject", "resolve", "suite":
		return true
	}
	return false
}
