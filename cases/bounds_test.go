package cases

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sizes of a case's inputs have documented bounds, refused naming the
// file, the field and the limit.
func TestCaseBounds(t *testing.T) {
	_, err := ParseCase("c.yaml", []byte("id: a\ninstruction: "+strings.Repeat("i", MaxInstruction+1)+"\n"))
	if want := fmt.Sprintf("c.yaml:2: instruction: %d bytes; the limit is %d", MaxInstruction+1, MaxInstruction); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a long instruction: %.200v, want %q", err, want)
	}
	if _, err := ParseCase("c.yaml", []byte("id: a\ninstruction: "+strings.Repeat("i", MaxInstruction)+"\n")); err != nil {
		t.Errorf("an instruction at the limit: %.200v", err)
	}

	dir := t.TempDir()
	put := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pad := "# " + strings.Repeat("x", MaxFileBytes) + "\n"
	if _, err := LoadCase(put("big-case.yaml", "id: a\ninstruction: x\n"+pad)); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("the limit for a case file is %d bytes", MaxFileBytes)) {
		t.Errorf("a large case file: %.200v", err)
	}
	if _, err := LoadTreatment(put("big-t.yaml", "id: t\nmodel: {provider: openai, name: m}\n"+pad)); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("the limit for a treatment file is %d bytes", MaxFileBytes)) {
		t.Errorf("a large treatment file: %.200v", err)
	}
	put("s/a.yaml", "turns: []\n"+"# "+strings.Repeat("x", MaxScriptBytes)+"\n")
	_, err = LoadTreatment(put("t.yaml", "id: t\nmodel: {provider: scripted, scripts: s}\n"))
	if err == nil || !strings.Contains(err.Error(), "model.scripts: ") || !strings.Contains(err.Error(), fmt.Sprintf("the limit for a script is %d bytes", MaxScriptBytes)) {
		t.Errorf("a large script: %.200v", err)
	}
}

// An input over its bound is named as the suite's author wrote it
// (relative to the file that names it), as every other error of the suite
// names its inputs, never by the absolute path the confinement resolved it
// to (docs/case.md#bounds).
func TestAnInputOverItsBoundIsNamedAsWritten(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	put := func(name, body string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What a suite's confinement does: every input read where it really is.
	confine := func(p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		return filepath.EvalSymlinks(abs)
	}
	pad := func(n int) string { return "# " + strings.Repeat("x", n) + "\n" }
	put("s/a.yaml", "turns: []\n"+pad(MaxScriptBytes))
	put("big-case.yaml", "id: a\ninstruction: x\n"+pad(MaxFileBytes))
	put("big-t.yaml", "id: t\nmodel: {provider: openai, name: m}\n"+pad(MaxFileBytes))
	put("prompt.md", strings.Repeat("p", MaxPromptBytes+1))
	put("t.yaml", "id: t\nmodel: {provider: scripted, scripts: s}\n")
	put("p.yaml", "id: p\nmodel: {provider: openai, name: m}\nscaffold: {prompt_file: prompt.md}\n")

	for _, tc := range []struct {
		name string
		load func() error
		want string
	}{
		{"a script", func() error { _, err := LoadTreatmentWithin("t.yaml", confine); return err }, "s/a.yaml: "},
		{"a case file", func() error { _, err := LoadCaseWithin("big-case.yaml", confine); return err }, "big-case.yaml: "},
		{"a treatment file", func() error { _, err := LoadTreatmentWithin("big-t.yaml", confine); return err }, "big-t.yaml: "},
		{"a prompt file", func() error { _, err := LoadTreatmentWithin("p.yaml", confine); return err }, "prompt.md: "},
	} {
		err := tc.load()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bytes; the limit for") {
			t.Errorf("%s over its bound: %.300v, want it named %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), dir) {
			t.Errorf("%s over its bound is named by its absolute path: %.300v", tc.name, err)
		}
	}
}
