package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/lab/whatif"
)

// Every command that reads the log from a store, a server or an export
// file takes exactly one of them, and refuses the mix before it opens
// anything: the store directory stays as it was given.
func TestEveryReaderOfALogSourceTakesOnlyOne(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "x.flx")
	policy := "../../" + whatif.ExamplePolicy
	for _, cmd := range [][]string{
		{"replay", "runs"},
		{"trace", "--otlp-endpoint", "http://127.0.0.1:4317"},
		{"view", "--listen", "127.0.0.1:0"},
		{"whatif", "--policy", policy},
	} {
		for _, where := range []string{"--store", "--nats"} {
			store := t.TempDir()
			value := store
			if where == "--nats" {
				value = "nats://127.0.0.1:1"
			}
			args := append(append([]string{}, cmd...), "--file", file, where, value)
			code, out, errOut := runCLI(t, args...)
			if code != 2 || !strings.Contains(errOut, "give --file, --store or --nats, only one") || out != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming the three, only one", args, code, out, errOut)
			}
			if left, err := os.ReadDir(store); err != nil || len(left) != 0 {
				t.Errorf("%v: the store directory holds %v (%v); want it untouched", args, left, err)
			}
		}
	}
}

// The commands that replay a stream from a sequence on say so alike.
func TestReplayAndTraceTakeTheSameFromSeq(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"replay", "trace"} {
		code, out, _ := runCLI(t, cmd, "--help")
		if code != 0 || !strings.Contains(out, "--from-seq uint") || !strings.Contains(out, "first stream sequence to replay") {
			t.Errorf("%s --help: exit %d, want --from-seq with its help:\n%s", cmd, code, out)
		}
	}
}
