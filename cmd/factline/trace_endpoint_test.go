package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Where the spans go is said, as a URL, before anything is read.
func TestTraceRefusesAMissingOrBadEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	file := filepath.Join(t.TempDir(), "x.flx")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--file", file}, "--otlp-endpoint http://HOST:4317 or $OTEL_EXPORTER_OTLP_ENDPOINT"},
		{[]string{"trace", "--file", file, "--otlp-endpoint", "127.0.0.1:4317"}, `--otlp-endpoint "127.0.0.1:4317": want a URL`},
		{[]string{"trace", "--file", file, "--otlp-endpoint", "grpc://127.0.0.1:4317"}, "want a URL, http://HOST:PORT"},
		{[]string{"trace", "--file", file, "--otlp-endpoint", "http://127.0.0.1:4317", "--follow"}, "--follow reads a store or a server"},
		{[]string{"trace", "--file", file, "--store", t.TempDir(), "--otlp-endpoint", "http://127.0.0.1:4317"}, "give --file, --store or --nats, only one"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4317")
	if code, _, errOut := runCLI(t, "trace", "--file", file); code != 2 || !strings.Contains(errOut, `$OTEL_EXPORTER_OTLP_ENDPOINT "localhost:4317": want a URL`) {
		t.Errorf("a bad endpoint from the environment: exit %d %q", code, errOut)
	}
}

// A receiver that is not there fails the command once the exporter's
// retries are spent, and the error names where the spans were to go: an
// operator who gave the endpoint through the environment, or a follower
// started by a unit file, otherwise reads a bare "context deadline
// exceeded".
func TestTraceNamesTheReceiverItCouldNotReach(t *testing.T) {
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite.yaml")
	body := "name: traced\ncases: [{path: " + filepath.Join(demo, "cases/read-only/case.yaml") + "}]\n" +
		"treatments: [{path: " + filepath.Join(demo, "treatments/stall-on.yaml") + "}]\ntrials: 1\ninputs: {allow_outside: [" + demo + "]}\n"
	if err := os.WriteFile(suite, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", suite, "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	// A port nothing listens on: bound, then closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close()
	defer func(d time.Duration) { exportTimeout = d }(exportTimeout)
	exportTimeout = 2 * time.Second
	code, _, errOut := runCLI(t, "trace", "--store", store, "--otlp-endpoint", endpoint)
	if code != 1 || !strings.Contains(errOut, endpoint) {
		t.Fatalf("trace to a receiver that is not there: exit %d %q, want 1 naming %s", code, errOut, endpoint)
	}
}
