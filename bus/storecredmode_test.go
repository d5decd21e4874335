package bus_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
)

// A store's credential that other users may read, or that holds no seed,
// stays so until someone fixes the file: an open that attaches says so
// at once, naming the file and the fix, instead of waiting out AttachWait
// as for a holder still starting and then blaming the holder's address.
func TestAnAttachRefusedByTheCredentialFileSaysSoAtOnce(t *testing.T) {
	ctx, dir, _ := heldStore(t)
	cred := filepath.Join(dir, bus.StoreCredentialFile)
	seed, err := os.ReadFile(cred)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(cred, 0o644); err != nil {
		t.Fatal(err)
	}
	// Long enough that a wait shows in the error, which names the wait.
	_, err = bus.OpenEmbedded(ctx, dir, bus.StoreOptions{AttachWait: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), "no address this process can reach") {
		t.Errorf("attach with a credential others may read: %v", err)
	}

	if err := os.Chmod(cred, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cred, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = bus.OpenEmbedded(ctx, dir, bus.StoreOptions{AttachWait: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), cred) || strings.Contains(err.Error(), "no address this process can reach") {
		t.Errorf("attach with a credential that holds no seed: %v", err)
	}

	if err := os.WriteFile(cred, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := bus.OpenEmbedded(ctx, dir, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("attach once the file is fixed: %v", err)
	}
	other.Close()
}
