package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// The log is append-only: on a real server, a request to delete one of
// FACTS's messages (plain or secure, through the client or the raw
// JetStream API, what 'nats stream rmm' sends) and a purge of all of it or
// of one run's subjects are refused by the server, and every fact stays.
func TestFactsRefusesDeleteAndPurge(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r1", 1, 3, bus.Expect{})
	s, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; !cfg.DenyDelete || !cfg.DenyPurge {
		t.Fatalf("FACTS created with deny_delete=%v deny_purge=%v", cfg.DenyDelete, cfg.DenyPurge)
	}
	refused := func(what string, err error, word string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), word+" not permitted") {
			t.Fatalf("%s: %v, want the server to refuse it", what, err)
		}
	}
	refused("delete message", s.DeleteMsg(ctx, 2), "message delete")
	refused("secure delete message", s.SecureDeleteMsg(ctx, 2), "message delete")
	refused("purge", s.Purge(ctx), "stream purge")
	refused("purge one run", s.Purge(ctx, jetstream.WithPurgeSubject("fact.s.r1.>")), "stream purge")
	refused("purge to a sequence", s.Purge(ctx, jetstream.WithPurgeSequence(3)), "stream purge")

	// The raw API request, as any client sends it.
	req, _ := json.Marshal(map[string]any{"seq": 1, "no_erase": true})
	m, err := b.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.DELETE."+bus.FactsStream, req)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Success || resp.Error == nil ||
		!strings.Contains(resp.Error.Description, "not permitted") {
		t.Fatalf("raw delete request answered %s", m.Data)
	}

	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 || info.State.FirstSeq != 1 || info.State.NumDeleted != 0 {
		t.Fatalf("FACTS after the refused requests: %+v", info.State)
	}
	if log, err := b.LoadRun(ctx, "s", "r1"); err != nil || len(log.Records) != 3 {
		t.Fatalf("the run after the refused requests: %d facts, %v", len(log.Records), err)
	}
}

// A FACTS stream made before the log was append-only (no deny_delete, no
// deny_purge) is reported when the bus opens, not silently changed: the
// bus still opens, a warning names what is missing and how to add it, and
// CheckAppendOnly says the same. MakeAppendOnly, the operator's explicit
// step, adds both; from then on a delete is refused.
func TestOldFactsStreamIsReportedNotChanged(t *testing.T) {
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{})
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.FactsStream, Subjects: []string{"fact.>"}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Replicas: 1, Duplicates: 2 * time.Minute, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	b, err := bus.Open(ctx, nc, bus.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("open over an old FACTS stream: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "deny_delete") ||
		!strings.Contains(out, "deny_purge") || !strings.Contains(out, "factline setup --append-only") {
		t.Fatalf("opening did not report the stream:\n%s", out)
	}
	if info, _ := s.Info(ctx); info.Config.DenyDelete || info.Config.DenyPurge {
		t.Fatal("open changed the existing stream")
	}
	err = b.CheckAppendOnly(ctx)
	var na *bus.NotAppendOnlyError
	if !errors.As(err, &na) || na.Stream != bus.FactsStream || strings.Join(na.Missing, ",") != "deny_delete,deny_purge" {
		t.Fatalf("CheckAppendOnly: %v", err)
	}

	appendRun(t, b, "s", "r1", 1, 2, bus.Expect{})
	if err := b.MakeAppendOnly(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.MakeAppendOnly(ctx); err != nil {
		t.Fatalf("a second MakeAppendOnly: %v", err)
	}
	if err := b.CheckAppendOnly(ctx); err != nil {
		t.Fatalf("after MakeAppendOnly: %v", err)
	}
	if err := s.DeleteMsg(ctx, 1); err == nil {
		t.Fatal("a delete went through after MakeAppendOnly")
	}
	if log, err := b.LoadRun(ctx, "s", "r1"); err != nil || len(log.Records) != 2 {
		t.Fatalf("the run after MakeAppendOnly: %d facts, %v", len(log.Records), err)
	}
}

// Retiring old suites, as docs/operations.md tells an operator: export the
// suite to keep, remove FACTS whole (allowed; deleting its messages is
// not), set up a new FACTS and import. The new log holds only the kept
// suite, loads its runs, and is append-only again.
func TestRetireSuitesByExportAndANewStream(t *testing.T) {
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	appendRun(t, b, "old", "r1", 1, 3, bus.Expect{})
	appendRun(t, b, "keep", "r1", 1, 2, bus.Expect{})
	var keep bytes.Buffer
	if res, err := b.Export(ctx, &keep, bus.ReadOptions{Filter: "fact.keep.>"}); err != nil || res.Messages != 2 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	if err := b.JetStream().DeleteStream(ctx, bus.FactsStream); err != nil {
		t.Fatalf("remove FACTS whole: %v", err)
	}
	fresh := bustest.OpenWith(t, srv, bus.Config{}) // what factline setup does
	if res, err := fresh.Import(ctx, &keep); err != nil || res.Messages != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if err := fresh.CheckAppendOnly(ctx); err != nil {
		t.Fatal(err)
	}
	if log, err := fresh.LoadRun(ctx, "keep", "r1"); err != nil || len(log.Records) != 2 {
		t.Fatalf("the kept run: %d facts, %v", len(log.Records), err)
	}
	if log, err := fresh.LoadRun(ctx, "old", "r1"); err != nil || len(log.Records) != 0 {
		t.Fatalf("the retired run: %d facts, %v", len(log.Records), err)
	}
	s, err := fresh.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 1); err == nil {
		t.Fatal("the new FACTS let a message be deleted")
	}
}
