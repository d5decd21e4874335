package secrets

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The one rule for files holding a secret: what is open to whom, and the
// fix, from the mode and the owner alone.
func TestFileExposureSaysWhoElseMayUseTheFile(t *testing.T) {
	for _, c := range []struct {
		mode        os.FileMode
		owner, self int
		loose       bool
		problems    []string
		fix         string
	}{
		{0o600, 1000, 1000, false, nil, "chmod 600 /s/k"},
		{0o400, 0, 1000, false, nil, "chmod 600 /s/k"}, // root's, as a Kubernetes secret volume's
		{0o644, 1000, 1000, true, []string{"other users may read it"}, "chmod 600 /s/k"},
		{0o444, 1000, 10001, true, []string{"other users may read it", "it belongs to uid 1000, not to this process's uid 10001"}, "chown 10001 /s/k && chmod 600 /s/k"},
		{0o620, 1000, 1000, true, []string{"its group may change it"}, "chmod 600 /s/k"},
		{0o602, 1000, 1000, true, []string{"any user may change it"}, "chmod 600 /s/k"},
		{0o666, 1000, 1000, true, []string{"other users may read it", "any user may change it"}, "chmod 600 /s/k"},
		{0o601, 1000, 1000, true, nil, "chmod 600 /s/k"}, // execute alone opens nothing; the store's rule still refuses it
	} {
		e := FileExposure{Path: "/s/k", Mode: c.mode, Owner: c.owner, Self: c.self}
		if e.Loose() != c.loose || !slices.Equal(e.Problems(), c.problems) || e.Fix() != c.fix {
			t.Errorf("mode %04o owner %d self %d: loose %v problems %q fix %q; want %v %q %q",
				c.mode, c.owner, c.self, e.Loose(), e.Problems(), e.Fix(), c.loose, c.problems, c.fix)
		}
	}
	if got := (FileExposure{Path: "/s/my key", Mode: 0o644}).Fix(); got != "chmod 600 '/s/my key'" {
		t.Errorf("a path with a space: fix %q", got)
	}

	p := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	e, err := StatFile(p)
	if err != nil || e.Mode != 0o640 || e.Owner != os.Geteuid() || e.Self != os.Geteuid() || e.ModeString() != "0640" {
		t.Errorf("StatFile of a file of this process's at 0640: %+v, %v", e, err)
	}
	if _, err := StatFile(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("StatFile of a missing file: %v", err)
	}
}
