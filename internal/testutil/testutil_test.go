package testutil_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// recorder is a testing.TB that keeps what a helper reported instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with r as its TB on a goroutine of its own, as the testing
// package does, so that a Fatalf ends only f.
func (r *recorder) run(f func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// A wait ends as soon as its condition holds, and fails, naming what it
// waited for, when the condition never does.
func TestAWaitEndsWhenItsConditionHoldsAndFailsWhenItNeverDoes(t *testing.T) {
	var r recorder
	n := 0
	r.run(func(tb testing.TB) {
		testutil.Within(tb, time.Minute, "the third ask", func() bool { n++; return n == 3 })
	})
	if r.fatal != "" || n != 3 {
		t.Errorf("waited for the third ask: asked %d times, failed %q", n, r.fatal)
	}
	r.run(func(tb testing.TB) {
		testutil.Within(tb, 30*time.Millisecond, "what never comes", func() bool { return false })
	})
	if !strings.Contains(r.fatal, "what never comes") {
		t.Errorf("a wait that timed out said %q", r.fatal)
	}
	r.fatal = ""
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.run(func(tb testing.TB) { testutil.Until(ctx, tb, "a cancelled wait", func() bool { return false }) })
	if !strings.Contains(r.fatal, "a cancelled wait") || !strings.Contains(r.fatal, "canceled") {
		t.Errorf("a wait whose context ended said %q", r.fatal)
	}
}

// A pure core may import the packages it is allowed and the standard
// library's that do no I/O; a third-party import and one that does I/O
// are each reported.
func TestAPureCoreGuardReportsWhatACoreMayNotImport(t *testing.T) {
	check := func(dir string) *recorder {
		t.Helper()
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		defer t.Chdir(wd)
		r := &recorder{}
		r.run(func(tb testing.TB) { testutil.CheckPureCore(tb, testutil.Module+"events") })
		return r
	}
	if r := check("testdata/pure"); len(r.errors) > 0 || r.fatal != "" {
		t.Errorf("a pure core was refused: %v %s", r.errors, r.fatal)
	}
	r := check("testdata/impure")
	if len(r.errors) != 2 || !strings.Contains(r.errors[0], "os") || !strings.Contains(r.errors[1], "nats.go") {
		t.Errorf("an impure core gave %q, want its os and nats.go imports", r.errors)
	}
	if r := check("testdata"); !strings.Contains(r.fatal, "no Go source files") {
		t.Errorf("a directory without sources gave %q, want that nothing was checked", r.fatal)
	}
}
