package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A script the workspace writes is run at once by a command, while other
// goroutines of the same process start processes (a runner's other runs,
// a grader's other instruments). A write descriptor a concurrent fork
// inherited would make the exec fail with "text file busy"; the workspace
// writes executables so that no fork can inherit one.
func TestAnExecutableJustWrittenCanBeRunWhileOthersFork(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_ = exec.Command("/bin/true").Run()
			}
		}()
	}
	busy := 0
	for i := 0; i < 300 && ctx.Err() == nil; i++ {
		name := fmt.Sprintf("s%d.sh", i)
		_, err := writeFrom(r, Entry{Path: name, Kind: KindExec}, func(w io.Writer) error {
			_, err := io.WriteString(w, "#!/bin/sh\nexit 0\n")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(filepath.Join(dir, name)).Run(); errors.Is(err, syscall.ETXTBSY) {
			busy++
		} else if err != nil {
			t.Fatalf("run %s: %v", name, err)
		}
	}
	cancel()
	wg.Wait()
	if busy > 0 {
		t.Fatalf("%d of the scripts were busy when run", busy)
	}
}
