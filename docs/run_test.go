package docs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// factlineOnPath builds the factline binary once per test binary and
// returns a PATH with its directory first, as a reader who installed it
// has.
func factlineOnPath(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "factline-docs-bin-")
		if buildErr != nil {
			return
		}
		out, err := testutil.GoBuild(filepath.Join(binDir, "factline"), "../cmd/factline").CombinedOutput()
		if err != nil {
			buildErr = err
			binDir = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/factline: %v\n%s", buildErr, binDir)
	}
	return binDir + string(os.PathListSeparator) + os.Getenv("PATH")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" && buildErr == nil {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// runBlock runs one `run` block's commands as written, with bash in dir,
// factline on PATH and temporary files kept under the test's own
// directory, and returns their standard output.
func runBlock(t *testing.T, f fence, dir, path string, timeout time.Duration) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", f.body)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path, "TMPDIR="+t.TempDir())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", f.where(), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s:\n%s\nfailed: %v\nstdout:\n%s\nstderr:\n%s", f.where(), f.body, err, stdout.String(), stderr.String())
		}
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running after %v:\n%s\nstderr:\n%s", f.where(), timeout, f.body, stderr.String())
	}
	return stdout.String()
}

// writeFiles writes a page's `file=` blocks under dir, refusing a path
// that leaves it.
func writeFiles(t *testing.T, fs []fence, dir string) []string {
	t.Helper()
	var written []string
	for _, f := range fs {
		if f.file == "" {
			continue
		}
		if filepath.IsAbs(f.file) || !filepath.IsLocal(f.file) {
			t.Fatalf("%s: file=%s is not a path inside the page's directory", f.where(), f.file)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s: file=%s is written twice", f.where(), f.file)
		}
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
		written = append(written, f.file)
	}
	return written
}

// The first-suite page, as written: its files in an empty directory, its
// commands run there in order, make a suite of two runs, both graded
// passed, one ended done and the other incomplete, as the page says.
func TestFirstSuitePageRunsAsWritten(t *testing.T) {
	const page = "first-suite.md"
	fs := fences(t, page)
	dir := t.TempDir()
	files := writeFiles(t, fs, dir)
	sort.Strings(files)
	want := []string{"cases/fix-greeting-quietly.yaml", "cases/fix-greeting.yaml", "fixture/check.sh", "fixture/greet.sh",
		"scripts/fix-greeting-quietly.yaml", "scripts/fix-greeting.yaml", "suite.yaml", "treatments/scripted.yaml"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("the page writes %v, want %v (the layout it shows)", files, want)
	}
	path := factlineOnPath(t)
	runs := 0
	for i, f := range fs {
		if !f.has("run") {
			continue
		}
		out := runBlock(t, f, dir, path, 5*time.Minute)
		runs++
		if runs == 1 {
			if i+1 == len(fs) || fs[i+1].lang != "" {
				t.Fatalf("%s: the run block is not followed by the output it prints", f.where())
			}
			sameHeadings(t, fs[i+1], out)
		}
	}
	if runs < 2 {
		t.Fatalf("the page has %d blocks to run, want the run and the report", runs)
	}

	// The report the page's store holds.
	out, err := exec.Command(filepath.Join(strings.Split(path, string(os.PathListSeparator))[0], "factline"),
		"report", "greetings", "--store", filepath.Join(dir, "store"), "--json").Output()
	if err != nil {
		t.Fatalf("factline report --json: %v", err)
	}
	var rep struct {
		Complete   bool `json:"complete"`
		Treatments []struct {
			Treatment string `json:"treatment"`
			Planned   int    `json:"planned"`
			Graded    int    `json:"graded"`
			Passed    int    `json:"passed"`
		} `json:"treatments"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if !rep.Complete || len(rep.Treatments) != 1 || rep.Treatments[0].Planned != 2 || rep.Treatments[0].Graded != 2 || rep.Treatments[0].Passed != 2 {
		t.Fatalf("report %+v, want one treatment with both runs graded passed", rep)
	}

	// How each run ended: the page's `replay runs` wrote runs.json.
	data, err := os.ReadFile(filepath.Join(dir, "runs.json"))
	if err != nil {
		t.Fatalf("the page's replay left no runs.json: %v", err)
	}
	var ended []struct {
		Run    string `json:"run"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(data, &ended); err != nil {
		t.Fatalf("runs.json: %v\n%s", err, data)
	}
	got := map[string]string{}
	for _, r := range ended {
		got[r.Run] = r.Status + " " + r.Reason
	}
	page2, _ := os.ReadFile(page)
	for run, status := range map[string]string{"fix-greeting-scripted-t1": "done", "fix-greeting-quietly-scripted-t1": "incomplete"} {
		if !strings.HasPrefix(got[run], status+" ") {
			t.Errorf("run %s ended %q, want %s", run, got[run], status)
			continue
		}
		// The page's table of endings says what the log says.
		reason := strings.TrimPrefix(got[run], status+" ")
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(run) + "` \\| `" + status + "` \\| `" + regexp.QuoteMeta(reason) + "` \\|")
		if !row.Match(page2) {
			t.Errorf("%s: no row for %s ending %s with %q", page, run, status, reason)
		}
	}
}

// sameHeadings checks that the report's headings a page shows (its
// table headers and the usage line: what does not change from run to run)
// are what the command printed.
func sameHeadings(t *testing.T, shown fence, printed string) {
	t.Helper()
	headings := 0
	for _, line := range strings.Split(shown.body, "\n") {
		if !strings.HasPrefix(line, " treatment ") && !strings.HasPrefix(line, "usage, ") {
			continue
		}
		headings++
		if !strings.Contains(printed, line+"\n") {
			t.Errorf("%s shows the heading\n%s\nwhich the report no longer prints:\n%s", shown.where(), line, printed)
		}
	}
	if headings == 0 {
		t.Errorf("%s shows no report heading to check", shown.where())
	}
}

// Every example has a README whose one `run` block runs it (from the
// repository's root, with factline on PATH), and every file its commands
// name exists. The container example needs its image built first:
// integration's TestTheContainerExampleRuns runs its README's commands.
func TestEveryExampleRunsWithOneCommand(t *testing.T) {
	dirs, err := os.ReadDir("../examples")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`(?:^|[\s=])((?:\./)?[\w-][\w./-]*\.(?:yaml|yml|sh|jsonl|csv|go))\b`)
	path := ""
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		name := d.Name()
		t.Run(name, func(t *testing.T) {
			readme := filepath.Join("..", "examples", name, "README.md")
			if _, err := os.Stat(readme); err != nil {
				t.Fatalf("examples/%s has no README.md: %v", name, err)
			}
			fs := fences(t, readme)
			var run []fence
			for _, f := range fs {
				if f.lang != "sh" && f.lang != "bash" {
					continue
				}
				for _, m := range named.FindAllStringSubmatch(f.body, -1) {
					// Commands run from the repository's root.
					p := m[1]
					if _, err := os.Stat(filepath.Join("..", p)); err != nil {
						t.Errorf("%s: names %s, which does not exist", f.where(), p)
					}
				}
				if f.has("run") {
					run = append(run, f)
				}
			}
			if name == "container" {
				src, err := os.ReadFile("../integration/container_test.go")
				if err != nil || !strings.Contains(string(src), `"../examples/container/build-image.sh"`) || !strings.Contains(string(src), `"../examples/container/suite.yaml"`) {
					t.Fatalf("no test runs the container example's commands (integration/container_test.go: %v)", err)
				}
				return
			}
			if name == "external-agent" {
				// Its agent comes from the npm registry (install.sh, once):
				// no test downloads it. services/runner's external-agent
				// tests run the same proxy with the tests' own miniagent.
				var body string
				for _, f := range fs {
					body += f.body
				}
				if !strings.Contains(body, "examples/external-agent/install.sh") || !strings.Contains(body, "examples/external-agent/suite.yaml") {
					t.Fatalf("%s: the commands do not install the agent and run the suite", readme)
				}
				return
			}
			if len(run) != 1 || strings.Count(strings.TrimSpace(run[0].body), "\n") != 0 {
				t.Fatalf("%s: want one `run` block of one command that runs the example, found %d", readme, len(run))
			}
			if path == "" {
				path = factlineOnPath(t)
			}
			runBlock(t, run[0], "..", path, 10*time.Minute)
		})
	}
}
