package bus_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// The store's lock file names its holder's command line for people, and
// stays (at mode 0644) after the holder ends; other processes quote it
// in their messages. A secret on that command line ('compare A@DIR
// B@nats://user:password@host', --password) must not be written there.
// Not parallel: it sets os.Args.
func TestTheLockFileKeepsNoSecretOfItsHoldersCommandLine(t *testing.T) {
	saved := os.Args
	defer func() { os.Args = saved }()
	os.Args = []string{"factline", "compare", "demo@store", "demo@nats://analyst:url-pw-93be@127.0.0.1:4222",
		"--password", "flag-pw-61ac", "--nats=nats://tok-pw-c07d@127.0.0.1:4222"}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	note, err := os.ReadFile(filepath.Join(dir, bus.StoreLockFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"url-pw-93be", "flag-pw-61ac", "tok-pw-c07d"} {
		if strings.Contains(string(note), secret) {
			t.Errorf("the lock file holds %s: %q", secret, note)
		}
	}
	if !strings.Contains(string(note), "factline compare demo@store demo@nats://") {
		t.Errorf("the lock file no longer names the command: %q", note)
	}
}
