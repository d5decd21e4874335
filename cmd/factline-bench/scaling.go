package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/factline/factline/bench"
)

// runScaling is `factline-bench scaling`: raw appends to one FACTS-like
// stream against the same appends partitioned over several streams by a
// subject mapping, on a three-node loopback cluster per fsync mode, the
// configurations interleaved. See docs/scaling.md.
func runScaling(args []string) error {
	fs := flag.NewFlagSet("factline-bench scaling", flag.ContinueOnError)
	modes := fs.String("modes", "always,interval", "fsync modes (a three-node cluster each, all up at once)")
	streams := fs.String("streams", "1,2,3", "stream counts, leaders on different nodes")
	oneLeader := fs.String("one-leader", "3", "stream counts also measured with every leader on one node (empty: none)")
	reps := fs.Int("reps", 3, "repetitions of every configuration, interleaved")
	runs := fs.Int("runs", 600, "runs appended to at once, each in a suite of its own (the partition key)")
	rounds := fs.Int("rounds", 20, "rounds per measurement, one fact to every run each")
	limit := fs.Duration("limit", 5*time.Second, "cap on one measurement (no round starts after it)")
	pubs := fs.Int("publishers", 3, "client connections, spread over the nodes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	modeList, err := durabilities(*modes)
	if err != nil {
		return err
	}
	cfg := bench.ScalingConfig{Modes: modeList, Reps: *reps, Runs: *runs, Rounds: *rounds, Limit: *limit, Publishers: *pubs, Progress: os.Stderr}
	spread, err := counts("--streams", *streams)
	if err != nil {
		return err
	}
	one, err := counts("--one-leader", *oneLeader)
	if err != nil {
		return err
	}
	for _, n := range spread {
		cfg.Points = append(cfg.Points, bench.ScalingPoint{Streams: n})
	}
	for _, n := range one {
		if n > 1 {
			cfg.Points = append(cfg.Points, bench.ScalingPoint{Streams: n, OneLeader: true})
		}
	}
	if len(cfg.Points) == 0 {
		return errors.New("scaling: --streams names no configuration")
	}
	dir, err := os.MkdirTemp("", "factline-scaling-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.Dir = dir
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	samples, err := bench.RunScaling(ctx, cfg)
	fmt.Print(bench.ScalingMarkdown(samples, bench.ThisMachine(), strings.Join(append([]string{"factline-bench"}, os.Args[1:]...), " ")))
	return err
}
