//go:build deploy

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/internal/testutil"
)

// jaegerModule is the module that pins the OTLP receiver the trace tests
// send to: Jaeger's all-in-one, a tool of its own module so that its
// dependencies stay out of factline's go.mod.
const jaegerModule = "../../tools/jaeger"

var (
	jaegerOnce sync.Once
	jaegerPath string
	jaegerErr  error
)

// jaegerBin builds Jaeger once per version and keeps it in
// tools/jaeger/.cache (ignored by git), named by its go.mod and go.sum:
// the build takes minutes, a test run seconds.
func jaegerBin(t *testing.T) string {
	t.Helper()
	jaegerOnce.Do(func() {
		h := sha256.New()
		for _, f := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(jaegerModule, f))
			if err != nil {
				jaegerErr = err
				return
			}
			h.Write(b)
		}
		dir, err := filepath.Abs(filepath.Join(jaegerModule, ".cache"))
		if err != nil {
			jaegerErr = err
			return
		}
		jaegerPath = filepath.Join(dir, "jaeger-"+hex.EncodeToString(h.Sum(nil))[:16])
		if _, err := os.Stat(jaegerPath); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			jaegerErr = err
			return
		}
		tmp := jaegerPath + ".building"
		cmd := testutil.GoBuild(tmp, "github.com/jaegertracing/jaeger/cmd/jaeger")
		cmd.Dir = jaegerModule
		if out, err := cmd.CombinedOutput(); err != nil {
			jaegerErr = fmt.Errorf("build jaeger: %v\n%s", err, out)
			return
		}
		jaegerErr = os.Rename(tmp, jaegerPath)
	})
	if jaegerErr != nil {
		t.Fatal(jaegerErr)
	}
	return jaegerPath
}

// jaeger is a running Jaeger all-in-one: OTLP/gRPC in, its query API out,
// traces in memory, every port on 127.0.0.1.
type jaeger struct {
	otlp  string // http://127.0.0.1:PORT, for --otlp-endpoint
	query string // http://127.0.0.1:PORT
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
    traces:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBin(t)
	queryPort, queryGRPC, otlpPort := freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, queryPort, queryGRPC, otlpPort), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", logs.String())
		}
	})
	j := &jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", otlpPort), query: fmt.Sprintf("http://127.0.0.1:%d", queryPort)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testutil.Until(ctx, t, "jaeger's query API answers", func() bool {
		select {
		case <-exited:
			t.Fatalf("jaeger exited:\n%s", logs.String())
		default:
		}
		resp, err := http.Get(j.query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return j
}

// jaegerTrace is a trace as Jaeger's query API returns it.
type jaegerTrace struct {
	TraceID string       `json:"traceID"`
	Spans   []jaegerSpan `json:"spans"`
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs since the epoch
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Timestamp int64 `json:"timestamp"`
		Fields    []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
}

// trace fetches one trace; raw is the response as Jaeger sent it.
func (j *jaeger) trace(t *testing.T, id string) (tr jaegerTrace, raw []byte, found bool) {
	t.Helper()
	resp, err := http.Get(j.query + "/api/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return tr, raw, false
	}
	var body struct{ Data []jaegerTrace }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &body) != nil || len(body.Data) != 1 {
		t.Fatalf("GET /api/traces/%s: %s\n%s", id, resp.Status, raw)
	}
	return body.Data[0], raw, true
}
