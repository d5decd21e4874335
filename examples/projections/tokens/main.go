// Command tokens is an analyst's projection: tokens per turn of every run,
// replayed from a factline store or an export file, without touching the
// services. The whole projection is the Fold below; the rest is wiring.
//
//	factline run examples/demo/suite.yaml --store /tmp/fl
//	go run ./examples/projections/tokens --store /tmp/fl
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
)

// turnTokens is one turn's usage; Known is false when the provider
// reported none (unknown is not zero).
type turnTokens struct {
	Turn   uint32 `json:"turn"`
	Input  uint64 `json:"input,omitempty"`
	Output uint64 `json:"output,omitempty"`
	Known  bool   `json:"known"`
}

// Tokens folds model.replied facts into tokens per turn, by run.
var Tokens = projections.Fold[map[string][]turnTokens]{
	Key:  "tokens",
	Help: "tokens per turn of every run",
	Init: func() map[string][]turnTokens { return map[string][]turnTokens{} },
	Apply: func(s map[string][]turnTokens, f events.Fact) map[string][]turnTokens {
		if r, ok := f.Body.(events.ModelReplied); ok {
			t := turnTokens{Turn: r.Turn, Known: r.Usage != nil}
			if r.Usage != nil {
				t.Input, t.Output = r.Usage.InputTokens, r.Usage.OutputTokens
			}
			key := f.Suite + "/" + f.Run
			s[key] = append(s[key], t)
		}
		return s
	},
}

func main() {
	store := flag.String("store", "", "a factline store directory")
	file := flag.String("file", "", "or an export file")
	flag.Parse()
	ctx := context.Background()
	var src replay.Source
	switch {
	case *file != "":
		src = replay.File(*file)
	case *store != "":
		srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: *store})
		check(err)
		defer srv.Shutdown()
		nc, err := srv.Connect()
		check(err)
		b, err := bus.Open(ctx, nc, bus.Config{})
		check(err)
		src = replay.Stream(b, bus.ReadOptions{})
	default:
		check(fmt.Errorf("give --store DIR or --file EXPORT"))
	}
	in := Tokens.Start()
	_, err := replay.Run(ctx, src, in, nil)
	check(err)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	check(enc.Encode(in.View()))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokens:", err)
		os.Exit(1)
	}
}
