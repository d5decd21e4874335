package view_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/view"
)

const demoSuite = "../examples/demo/suite.yaml"

// The demo suite is run once for the package's tests that only read it:
// it is the log the viewer is shown with.
var (
	demoOnce    sync.Once
	demoBus     *bus.Bus
	demoErr     error
	demoCleanup []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(demoCleanup) - 1; i >= 0; i-- {
		demoCleanup[i]()
	}
	os.Exit(code)
}

// demo returns a bus on a store the demo suite has been run into, to its
// report.
func demo(t testing.TB) *bus.Bus {
	t.Helper()
	demoOnce.Do(func() { demoBus, demoErr = runDemo() })
	if demoErr != nil {
		t.Fatalf("run the demo: %v", demoErr)
	}
	return demoBus
}

func runDemo() (*bus.Bus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "factline-view-")
	if err != nil {
		return nil, err
	}
	demoCleanup = append(demoCleanup, func() { os.RemoveAll(dir) })
	b, err := openStore(ctx, dir+"/store")
	if err != nil {
		return nil, err
	}
	if err := runSuite(ctx, b, demoSuite, dir); err != nil {
		return nil, err
	}
	return b, nil
}

// openTestStore starts an embedded server on dir for one test: it is shut
// down when the test ends, before the test's temporary directories are
// removed (a server still writing its consumers' state made that removal
// fail with "directory not empty").
func openTestStore(ctx context.Context, t *testing.T, dir string) *bus.Bus {
	t.Helper()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir, Durability: bus.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.Open(ctx, nc, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openStore starts an embedded server on dir for the rest of the package's
// tests.
func openStore(ctx context.Context, dir string) (*bus.Bus, error) {
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir, Durability: bus.SyncInterval})
	if err != nil {
		return nil, err
	}
	demoCleanup = append(demoCleanup, srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		return nil, err
	}
	demoCleanup = append(demoCleanup, nc.Close)
	return bus.Open(ctx, nc, bus.Config{})
}

// runSuite runs a suite file through a whole fleet to its report.
func runSuite(ctx context.Context, b *bus.Bus, path, work string) error {
	for _, d := range []string{work + "/runner", work + "/grader"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	f, err := fleet.Start(ctx, b, fleet.Options{Per: map[string][]kit.Option{
		fleet.Runner: {runner.WithWorkDir(work + "/runner")},
		fleet.Grader: {grader.WithWorkDir(work + "/grader")},
	}})
	if err != nil {
		return err
	}
	p, err := fleettest.SubmitFile(ctx, b, path, "view-test")
	if err == nil {
		err = awaitReported(ctx, b, p.Spec.Name)
	}
	return errors.Join(err, f.Stop())
}

func awaitReported(ctx context.Context, b *bus.Bus, suite string) error {
	err := fleettest.Await(ctx, b, suite, events.SuiteScope, func(log bus.RunLog) bool {
		return slices.ContainsFunc(log.Records, func(r bus.Record) bool { _, ok := r.Fact.Body.(events.SuiteReported); return ok })
	})
	if err != nil {
		return fmt.Errorf("suite %s was never reported: %w", suite, err)
	}
	return nil
}

// lastSeq is the sequence of the newest message of FACTS.
func lastSeq(t testing.TB, ctx context.Context, b *bus.Bus) uint64 {
	t.Helper()
	s, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// serve starts a viewer of cfg on a loopback HTTP server for the test,
// fed until the test ends.
func serve(t testing.TB, cfg view.Config) (*view.Server, *httptest.Server) {
	t.Helper()
	s, err := view.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	h := httptest.NewServer(s)
	t.Cleanup(func() {
		h.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the viewer's feed: %v", err)
		}
	})
	return s, h
}

// serveCaughtUp serves a live viewer of b that has folded the whole log.
func serveCaughtUp(t testing.TB, ctx context.Context, b *bus.Bus) (*view.Server, *httptest.Server) {
	t.Helper()
	s, h := serve(t, view.Config{Bus: b})
	if err := s.WaitThrough(ctx, lastSeq(t, ctx, b)); err != nil {
		t.Fatal(err)
	}
	return s, h
}

// get fetches a page and returns its status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
