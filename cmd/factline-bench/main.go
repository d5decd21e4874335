// Command factline-bench runs factline's benchmark table side by side with
// raw JetStream on an embedded server, in both fsync modes, prints it and
// writes it into docs/benchmarks.md. See docs/benchmarks.md.
//
// `factline-bench scaling` measures raw appends to one stream against
// several partitions of it on a three-node loopback cluster instead; see
// docs/scaling.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/factline/factline/bench"
	"github.com/factline/factline/bus"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "factline-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) > 1 && os.Args[1] == "scaling" {
		return runScaling(os.Args[2:])
	}
	fs := flag.NewFlagSet("factline-bench", flag.ContinueOnError)
	modes := fs.String("modes", "always,interval", "fsync modes to run the table in")
	reps := fs.Int("reps", 3, "repetitions of each figure (at least 3 for the table)")
	roundsAlways := fs.Int("b1-rounds-always", 5, "B1 rounds (1,000 facts each) per repetition with fsync always")
	roundsInterval := fs.Int("b1-rounds-interval", 30, "B1 rounds (1,000 facts each) per repetition with fsync interval")
	turnRuns := fs.Int("b2-runs", 200, "B2 concurrent runs")
	turnTurns := fs.Int("b2-turns", 10, "B2 turns per run")
	latTurns := fs.Int("b3-turns", 50, "B3 turns of the one run")
	sweepRuns := fs.String("b7-runs", "1,4,16,50,200", "B7 concurrencies (runs at once, ascending; empty skips B7)")
	sweepInstances := fs.String("b7-instances", "1,2", "B7 instance counts of every service, run at the largest concurrency")
	sweepTurns := fs.Int("b7-turns", 10, "B7 turns per run")
	longTurns := fs.Int("b8-turns", 60, "B8 turns of the one long run (at least 49)")
	fillFacts := fs.Int("facts", 1_000_000, "facts in the stream B4 replays and B5 loads from (a multiple of 50)")
	loads := fs.Int("b5-loads", 200, "B5 loads per repetition")
	memRuns := fs.Int("b6-runs", 10_000, "B6 completed runs (0 skips B6)")
	memModes := fs.String("b6-modes", "interval", "fsync modes B6 runs in (10,000 runs with fsync always take several minutes more)")
	perSuite := fs.Int("b6-suite", 500, "B6 runs per suite")
	factline := fs.String("factline", "bin/factline", "the factline binary B6 starts services from")
	dir := fs.String("dir", "", "where stores live while the benchmark runs (default: a new temp dir, removed afterwards)")
	out := fs.String("out", "", "also write the table into this markdown file, between its generated-part markers")
	profile := fs.String("profile", "", "write a CPU profile of each part to this directory")
	parts := fs.String("parts", "", "run only these figures, e.g. B2,B6 (default: all; a partial run is not written to --out)")
	verbose := fs.Bool("v", false, "log what the in-process services do (to stderr)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *reps < 1 || *fillFacts < 50 || *fillFacts%50 != 0 {
		return errors.New("need --reps ≥ 1 and --facts a positive multiple of 50")
	}
	if *longTurns < 49 || *sweepTurns < 1 {
		return errors.New("need --b8-turns ≥ 49 (B8 compares turns 40–49 with 1–10) and --b7-turns ≥ 1")
	}
	runsList, err := counts("--b7-runs", *sweepRuns)
	if err != nil {
		return err
	}
	instList, err := counts("--b7-instances", *sweepInstances)
	if err != nil {
		return err
	}
	cfg := bench.Config{Reps: *reps, TurnRuns: *turnRuns, TurnTurns: *turnTurns, LatencyTurns: *latTurns,
		SweepRuns: runsList, SweepInstances: instList, SweepTurns: *sweepTurns, LongTurns: *longTurns,
		FillFacts: *fillFacts, Loads: *loads, MemoryRuns: *memRuns, MemoryPerSuite: *perSuite,
		AppendRounds: map[bus.Durability]int{bus.SyncAlways: *roundsAlways, bus.SyncInterval: *roundsInterval},
		Factline:     *factline, Progress: os.Stderr, Profile: *profile}
	if *parts != "" {
		cfg.Parts = strings.Split(*parts, ",")
		*out = ""
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.Modes, err = durabilities(*modes); err != nil {
		return err
	}
	if cfg.MemoryModes, err = durabilities(*memModes); err != nil {
		return err
	}
	if *memRuns > 0 {
		abs, err := filepath.Abs(*factline)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("B6 needs the factline binary (make build, or --factline PATH, or --b6-runs 0): %w", err)
		}
		cfg.Factline = abs
	}
	cfg.Dir = *dir
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "factline-bench-")
		if err != nil {
			return err
		}
		cfg.Dir = d
	}
	defer os.RemoveAll(cfg.Dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg)
	command := "make bench   # = " + strings.Join(append([]string{"factline-bench"}, os.Args[1:]...), " ")
	text := rep.Markdown(bench.ThisMachine(), command)
	fmt.Print(text)
	if err != nil {
		return err
	}
	if *out != "" {
		doc, err := os.ReadFile(*out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(*out, []byte(bench.Splice(string(doc), text)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote the table into %s\n", *out)
	}
	return nil
}
