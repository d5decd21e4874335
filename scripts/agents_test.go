package scripts

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every npm agent a test drives from /usr/local/lib/factline-agents is one
// test-deps installs: a test added for a new agent fails on a fresh
// machine otherwise (the qwen container test did, while test-deps
// installed only codex and claude-code).
func TestTestDepsInstallsEveryAgentTheTestsDrive(t *testing.T) {
	installer, err := os.ReadFile("../examples/external-agent/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	// install.sh names each agent and the version its directory carries.
	byDir := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+)\) pkg=\S+ version=(\S+)`).FindAllStringSubmatch(string(installer), -1) {
		byDir[m[1]+"-"+m[2]] = m[1]
	}
	if len(byDir) < 3 {
		t.Fatalf("found %d agents in install.sh: the test no longer reads it", len(byDir))
	}

	needed := map[string]string{} // agent name -> a test file that needs it
	dirRef := regexp.MustCompile(`/usr/local/lib/factline-agents/([a-z]+-[0-9][0-9.]*)`)
	// Every test file of the module, at any depth: a glob of fixed depth
	// would miss an agent test added one folder further down.
	err = filepath.WalkDir("..", func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(f, "_test.go") || f == "../scripts/agents_test.go" {
			return err
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, m := range dirRef.FindAllStringSubmatch(string(src), -1) {
			name, ok := byDir[m[1]]
			if !ok {
				t.Errorf("%s drives %s, which install.sh does not install", f, m[1])
				continue
			}
			needed[name] = f
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(needed) == 0 {
		t.Fatal("no test names an agent directory: the test no longer finds them")
	}

	script, err := os.ReadFile("test-deps")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`(?m)^\s*"\$install"(.*)$`).FindStringSubmatch(string(script))
	if call == nil {
		t.Fatal("test-deps does not run install.sh")
	}
	args := strings.Fields(call[1])
	for name, f := range needed {
		if len(args) > 0 && !strings.Contains(" "+strings.Join(args, " ")+" ", " "+name+" ") {
			t.Errorf("%s needs the agent %s, but test-deps installs only %v", f, name, args)
		}
	}
}
