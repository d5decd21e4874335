package suites

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confined lays out a suite in base/suite (from suiteFiles) next to a
// directory base/outside holding a case, a fixture and a scripts
// directory, and returns base.
func confined(t *testing.T, edit func(base string, files map[string]string)) string {
	t.Helper()
	base := t.TempDir()
	files := suiteFiles(goodSuite)
	if edit != nil {
		edit(base, files)
	}
	for name, content := range files {
		write(t, filepath.Join(base, "suite", name), content)
	}
	write(t, filepath.Join(base, "outside", "secret", "key.txt"), "do not upload\n")
	write(t, filepath.Join(base, "outside", "case.yaml"), strings.ReplaceAll(caseYAML, "%s", "add"))
	write(t, filepath.Join(base, "outside", "fixture", "x.txt"), "1\n")
	write(t, filepath.Join(base, "outside", "scripts", "add.yaml"), "turns: []\n")
	write(t, filepath.Join(base, "outside", "scripts", "mul.yaml"), "turns: []\n")
	return base
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every input a suite names resolves inside the suite file's directory,
// after following symlinks; anything else is refused naming the entry and
// the path, unless the suite file lists the directory under
// inputs.allow_outside.
func TestInputsStayInsideTheSuiteDirectory(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(base string, files map[string]string)
		after func(base string) // symlinks, made after the files
		want  []string
	}{
		{"case path climbs out", func(_ string, f map[string]string) {
			f["suite.yaml"] = strings.Replace(goodSuite, "cases/add/case.yaml", "../outside/case.yaml", 1)
		}, nil, []string{"suite.yaml:5: cases[0]: ", filepath.Join("outside", "case.yaml") + `" is outside`, "outside the suite's directory", "inputs.allow_outside"}},
		{"fixture climbs out", func(_ string, f map[string]string) {
			f["cases/add/case.yaml"] = strings.Replace(f["cases/add/case.yaml"], "fixture: fixture", "fixture: ../../../outside/secret", 1)
		}, nil, []string{"suite.yaml:5: cases[0]: ", "fixture: ", filepath.Join("outside", "secret") + `" is outside`, "outside the suite's directory"}},
		{"absolute case path", func(base string, f map[string]string) {
			f["suite.yaml"] = strings.Replace(goodSuite, "cases/add/case.yaml", filepath.Join(base, "outside", "case.yaml"), 1)
		}, nil, []string{"suite.yaml:5: cases[0]: ", "outside the suite's directory"}},
		{"fixture is a symlink to outside", func(_ string, f map[string]string) {
			delete(f, "cases/add/fixture/x.txt")
		}, func(base string) {
			symlink(t, filepath.Join(base, "outside", "secret"), filepath.Join(base, "suite", "cases", "add", "fixture"))
		}, []string{"suite.yaml:5: cases[0]: ", "fixture: ", "resolves to ", filepath.Join("outside", "secret")}},
		{"scripts directory outside", func(_ string, f map[string]string) {
			f["treatments/base.yaml"] = "id: base\nmodel: {provider: scripted, scripts: ../../outside/scripts}\n"
		}, nil, []string{"suite.yaml:9: treatments[0]: ", "model.scripts: ", "outside the suite's directory"}},
		{"a script is a symlink to outside", nil, func(base string) {
			p := filepath.Join(base, "suite", "treatments", "scripts", "add.yaml")
			os.Remove(p)
			symlink(t, filepath.Join(base, "outside", "secret", "key.txt"), p)
		}, []string{"suite.yaml:9: treatments[0]: ", "add.yaml", "outside the suite's directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := confined(t, c.edit)
			if c.after != nil {
				c.after(base)
			}
			_, err := Load(filepath.Join(base, "suite", "suite.yaml"))
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("loaded: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q does not name %q", err, w)
				}
			}
		})
	}
}

// The suite file's author may allow more, explicitly, by directory.
func TestInputsAllowOutside(t *testing.T) {
	allowed := strings.Replace(goodSuite, "cases/add/case.yaml", "../outside/case.yaml", 1) +
		"inputs: {allow_outside: [../outside]}\n"
	base := confined(t, func(_ string, f map[string]string) { f["suite.yaml"] = allowed })
	s, err := Load(filepath.Join(base, "suite", "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(base, "outside", "fixture"))
	if s.Cases[0].Fixture != real {
		t.Fatalf("fixture %s, want the real path %s", s.Cases[0].Fixture, real)
	}
	// Allowing one directory allows only that one.
	base = confined(t, func(_ string, f map[string]string) {
		f["suite.yaml"] = strings.Replace(goodSuite, "cases/add/case.yaml", "../outside/case.yaml", 1) +
			"inputs: {allow_outside: [../outside/scripts]}\n"
	})
	if _, err := Load(filepath.Join(base, "suite", "suite.yaml")); err == nil || !strings.Contains(err.Error(), "outside the suite's directory") {
		t.Fatalf("a sibling of the allowed directory: %v", err)
	}
	// An allowance that names nothing is a mistake in the suite file.
	base = confined(t, func(_ string, f map[string]string) {
		f["suite.yaml"] = goodSuite + "inputs: {allow_outside: [../nowhere]}\n"
	})
	if _, err := Load(filepath.Join(base, "suite", "suite.yaml")); err == nil || !strings.Contains(err.Error(), "inputs.allow_outside[0]") {
		t.Fatalf("a missing allowed directory: %v", err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// A missing input is named as the suite file names it, whole, not by the
// absolute path of the directory where resolving it stopped ("lstat
// /home/me/suite/cases/nope: no such file or directory" for
// cases/nope/case.yaml).
func TestAMissingInputIsNamedAsWritten(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(f map[string]string)
		want string
	}{
		{"a case in a missing directory", func(f map[string]string) {
			f["suite.yaml"] = strings.Replace(goodSuite, "cases/add/case.yaml", "cases/nope/case.yaml", 1)
		}, filepath.Join("cases", "nope", "case.yaml") + ": "},
		{"a missing treatment", func(f map[string]string) {
			f["suite.yaml"] = strings.Replace(goodSuite, "treatments/base.yaml", "treatments/nope.yaml", 1)
		}, filepath.Join("treatments", "nope.yaml") + ": "},
		{"a missing prompt file", func(f map[string]string) {
			f["treatments/base.yaml"] = strings.TrimRight(f["treatments/base.yaml"], "\n") + "\nscaffold: {prompt_file: prompts/terse.md}\n"
		}, filepath.Join("treatments", "prompts", "terse.md") + ": "},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := confined(t, func(_ string, f map[string]string) { c.edit(f) })
			t.Chdir(filepath.Join(base, "suite"))
			_, err := Load("suite.yaml")
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("loaded: %v", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "no such file or directory") {
				t.Errorf("the error %q does not name %q as missing", err, c.want)
			}
			if strings.Contains(err.Error(), base) {
				t.Errorf("the error %q names the input by its absolute path", err)
			}
		})
	}
}
