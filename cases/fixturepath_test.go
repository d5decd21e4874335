package cases

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A fixture that is missing, or is a file, is named as the case writes it
// and as it resolved, with what is wrong: "is not a directory" said of a
// path that does not exist sends its author looking for the wrong thing.
func TestAFixtureThatIsNotThereSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ fixture, want string }{
		{"../fixturez", `fixture: "../fixturez" (` + filepath.Join(filepath.Dir(dir), "fixturez") + `) does not exist`},
		{"afile", `fixture: "afile" (` + filepath.Join(dir, "afile") + `) is a file, not a directory`},
	} {
		_, err := ParseCaseAt("case.yaml", dir, []byte("id: a\ninstruction: x\nfixture: "+c.fixture+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fixture %s: got %v, want %q", c.fixture, err, c.want)
		}
	}
}
