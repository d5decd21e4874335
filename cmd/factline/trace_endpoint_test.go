package main

import (
	"path/filepath"
	"strings"
	"testing"
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
