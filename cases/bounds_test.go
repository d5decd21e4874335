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
