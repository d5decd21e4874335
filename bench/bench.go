// Package bench measures factline side by side with raw JetStream on one
// embedded server: append throughput (B1), end-to-end turns (B2), per-turn
// latency (B3), replay (B4), loading one run (B5), the services' memory
// (B6), turns per second by concurrency and instances (B7) and the cost of
// a turn late in a long run (B8), in both fsync modes. cmd/factline-bench runs it; docs/benchmarks.md
// explains the figures.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/factline/factline/bus"
)

// Config bounds every part of the benchmark in count; time limits guard
// against a hang.
type Config struct {
	// Modes are the fsync modes to run the table in.
	Modes []bus.Durability
	// Reps is how many repetitions each figure takes (the table shows the
	// median and the spread).
	Reps int
	// AppendRounds is how many rounds of B1 (one fact to each of 1,000
	// runs per round) each repetition takes, per mode.
	AppendRounds map[bus.Durability]int
	// TurnRuns and TurnTurns shape B2: concurrent runs × turns.
	TurnRuns, TurnTurns int
	// LatencyTurns is the length of B3's one run.
	LatencyTurns int
	// SweepRuns are B7's concurrencies (runs at once, ascending), each
	// run SweepTurns turns long, with one instance of every service;
	// SweepInstances are the instance counts B7 also runs at the largest
	// concurrency. Empty SweepRuns skips B7.
	SweepRuns, SweepInstances []int
	SweepTurns                int
	// LongTurns is the length of B8's one run (at least 49: it compares
	// turns 40–49 with turns 1–10).
	LongTurns int
	// FillFacts is the size of the stream B4 replays and B5 loads from.
	FillFacts int
	// Loads is how many loads (and direct gets) one B5 repetition takes.
	Loads int
	// MemoryRuns is how many completed runs B6 waits for, in suites of
	// MemoryPerSuite; 0 skips B6.
	MemoryRuns, MemoryPerSuite int
	// MemoryModes are the fsync modes B6 runs in (empty: all of Modes).
	MemoryModes []bus.Durability
	// Factline is the factline binary B6 starts services from.
	Factline string
	// Dir holds the stores and work directories; removed afterwards.
	Dir string
	// Progress receives one line per step.
	Progress io.Writer
	// Profile, when set, is a directory for CPU profiles of each part.
	Profile string
	// Logger, when set, receives the in-process services' logs.
	Logger *slog.Logger
	// Parts limits the run to these figures ("B1".."B8"); empty runs all.
	Parts []string
}

// SweepSample is one configuration of B7 and its turns/s.
type SweepSample struct {
	Point sweepPoint
	Rate  Sample
}

// Report is what one benchmark run measured.
type Report struct {
	Started time.Time
	Took    time.Duration
	Fill    time.Duration
	Modes   []ModeReport
	Config  Config
}

// ModeReport is the table of one fsync mode.
type ModeReport struct {
	Mode bus.Durability
	// B1: facts/s.
	AppendFL, AppendRaw, AppendRatio Sample
	// B2: facts/s, and the facts one suite committed; turns/s; the raw
	// chain of B3 for as many runs at once (turns/s) and the ratio of
	// the two; the bytes per turn the suite added to the facts and to the
	// blobs.
	Turns                           Sample
	TurnsFacts                      uint64
	TurnRate, ChainRate, ChainRatio Sample
	FactBytes, BlobBytes            Sample
	// B2: bytes per turn of the Factline-Prev header and of all headers.
	PrevBytes, HeaderBytes Sample
	// B2: what the server's block compression makes of FACTS' sealed
	// blocks after the first suite (compressed ÷ stored bytes); 0 when
	// FACTS held no facts.
	CompressedRatio float64
	// CompressedSealed says whether CompressedRatio is of sealed blocks,
	// or of the one block FACTS had, compressed as it stands.
	CompressedSealed bool
	// B7: turns/s at each configuration, in sweepPoints order.
	Sweep []SweepSample
	// B8: milliseconds, the median turn of turns 1–10 and of 40–49, and
	// their ratio.
	LongEarly, LongLate, LongRatio Sample
	// B8: bytes the blob bucket grew by per turn of the run.
	LongBlobBytes Sample
	// B3: milliseconds.
	LatP50, LatP99, RawP50, RawP99, LatRatio Sample
	// B4: facts/s.
	ReplayFL, ReplayRaw, ReplayRatio Sample
	// B5: milliseconds.
	LoadP50, LoadP99, GetP50, GetP99, LoadRatio Sample
	// B6.
	Memory memResult
	// Took is how long each part took.
	Took map[string]time.Duration
}

func (c Config) wants(part string) bool {
	return len(c.Parts) == 0 || slices.Contains(c.Parts, part)
}

// Run runs the whole table in every mode.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Started: time.Now().UTC(), Config: cfg}
	say := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "%s  "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return rep, err
	}
	// The stream B4 and B5 read is written once, with interval fsync:
	// 1,000,000 appends fsynced one by one would take minutes, and reading
	// does not fsync. Each mode's server then reads it.
	readDir := filepath.Join(cfg.Dir, "read")
	t0 := time.Now()
	if !cfg.wants("B4") && !cfg.wants("B5") {
		cfg.FillFacts = 0
	} else if err := withServer(ctx, readDir, bus.SyncInterval, false, cfg.Logger, func(s *server) error {
		say("filling a stream with %d facts", cfg.FillFacts)
		return fill(ctx, s.b, cfg.FillFacts)
	}); err != nil {
		return rep, fmt.Errorf("fill: %w", err)
	}
	if cfg.FillFacts > 0 {
		rep.Fill = time.Since(t0)
		say("filled in %v", rep.Fill.Round(time.Second))
	}
	for _, mode := range cfg.Modes {
		m, err := runMode(ctx, cfg, mode, readDir, say)
		rep.Modes = append(rep.Modes, m)
		if err != nil {
			return rep, fmt.Errorf("fsync=%s: %w", mode, err)
		}
	}
	rep.Took = time.Since(rep.Started)
	return rep, nil
}

func withServer(ctx context.Context, dir string, mode bus.Durability, listen bool, logger *slog.Logger, fn func(*server) error) error {
	s, err := startServer(ctx, dir, mode, listen, logger)
	if err != nil {
		return err
	}
	defer s.close()
	return fn(s)
}

func runMode(ctx context.Context, cfg Config, mode bus.Durability, readDir string, say func(string, ...any)) (ModeReport, error) {
	m := ModeReport{Mode: mode, Took: map[string]time.Duration{}}
	part := func(name string, fn func() error) error {
		if !cfg.wants(name) {
			return nil
		}
		say("fsync=%s %s", mode, name)
		stop := startProfile(cfg.Profile, string(mode)+"-"+name)
		t0 := time.Now()
		err := fn()
		m.Took[name] = time.Since(t0)
		stop()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	// Reads: B4 and B5 on the filled stream.
	var err error
	if cfg.FillFacts > 0 {
		err = withServer(ctx, readDir, mode, false, cfg.Logger, func(s *server) error {
			if err := part("B4", func() error {
				for r := range cfg.Reps {
					res, err := benchReplay(ctx, s.b, r, cfg.FillFacts)
					if err != nil {
						return err
					}
					m.ReplayFL, m.ReplayRaw = append(m.ReplayFL, res.factline), append(m.ReplayRaw, res.raw)
					m.ReplayRatio = append(m.ReplayRatio, res.factline/res.raw)
				}
				return nil
			}); err != nil {
				return err
			}
			return part("B5", func() error {
				for range cfg.Reps {
					res, err := benchLoad(ctx, s.b, cfg.FillFacts/fillRunLen, cfg.Loads)
					if err != nil {
						return err
					}
					m.LoadP50, m.LoadP99 = append(m.LoadP50, ms(res.loadP50)), append(m.LoadP99, ms(res.loadP99))
					m.GetP50, m.GetP99 = append(m.GetP50, ms(res.getP50)), append(m.GetP99, ms(res.getP99))
					m.LoadRatio = append(m.LoadRatio, float64(res.loadP50)/float64(res.getP50))
				}
				return nil
			})
		})
	}
	if err != nil {
		return m, err
	}
	// Writes: B3, B2, B6 and B1 on a fresh store.
	dir := filepath.Join(cfg.Dir, string(mode))
	defer os.RemoveAll(dir)
	err = withServer(ctx, filepath.Join(dir, "store"), mode, true, cfg.Logger, func(s *server) error {
		work := filepath.Join(dir, "work")
		stop := func() error { return nil }
		if cfg.wants("B2") || cfg.wants("B3") || cfg.wants("B7") || cfg.wants("B8") {
			slots := cfg.TurnRuns
			if len(cfg.SweepRuns) > 0 {
				slots = max(slots, slices.Max(cfg.SweepRuns))
			}
			if stop, err = startServices(ctx, s.b, slots, 1, work, cfg.Logger, nil); err != nil {
				return err
			}
		}
		err := part("B3", func() error {
			for r := range cfg.Reps {
				res, err := benchLatency(ctx, s.b, filepath.Join(dir, "suites"), fmt.Sprintf("b3-%d", r), cfg.LatencyTurns)
				if err != nil {
					return err
				}
				m.LatP50, m.LatP99 = append(m.LatP50, ms(res.p50)), append(m.LatP99, ms(res.p99))
				m.RawP50, m.RawP99 = append(m.RawP50, ms(res.rawP50)), append(m.RawP99, ms(res.rawP99))
				m.LatRatio = append(m.LatRatio, float64(res.p50)/float64(res.rawP50))
			}
			return nil
		})
		if err == nil {
			err = part("B8", func() error {
				for r := range cfg.Reps {
					res, err := benchLong(ctx, s.b, filepath.Join(dir, "suites"), fmt.Sprintf("b8-%d", r), cfg.LongTurns)
					if err != nil {
						return err
					}
					m.LongEarly, m.LongLate = append(m.LongEarly, ms(res.early)), append(m.LongLate, ms(res.late))
					m.LongRatio = append(m.LongRatio, float64(res.late)/float64(res.early))
					m.LongBlobBytes = append(m.LongBlobBytes, res.blobBytes)
				}
				return nil
			})
		}
		if err == nil {
			err = part("B2", func() error {
				for r := range cfg.Reps {
					res, err := benchTurns(ctx, s.b, filepath.Join(dir, "suites"), fmt.Sprintf("b2-%d", r), cfg.TurnRuns, cfg.TurnTurns)
					if err != nil {
						return err
					}
					m.Turns, m.TurnsFacts = append(m.Turns, res.factsPerSec), res.facts
					m.TurnRate = append(m.TurnRate, res.turnsPerSec)
					turns := float64(cfg.TurnRuns * cfg.TurnTurns)
					m.FactBytes, m.BlobBytes = append(m.FactBytes, float64(res.factBytes)/turns), append(m.BlobBytes, float64(res.blobBytes)/turns)
					perTurn := float64(res.facts) / turns
					m.PrevBytes, m.HeaderBytes = append(m.PrevBytes, res.prevBytes*perTurn), append(m.HeaderBytes, res.headerBytes*perTurn)
					if r == 0 {
						// Before any raw chain writes its messages: the
						// sealed blocks hold factline's facts (B3's, B8's
						// and this suite's).
						if ratio, sealed, err := compressedRatio(filepath.Join(dir, "store")); err == nil {
							m.CompressedRatio, m.CompressedSealed = ratio, sealed
						} else {
							say("B2 compressed disk: %v", err)
						}
					}
					// The baseline right after, on the same server: the raw
					// chain of B3 for as many runs at once.
					raw, err := rawChain(ctx, s.b, fmt.Sprintf("b2raw-%d", r), cfg.TurnRuns, cfg.TurnTurns)
					if err != nil {
						return fmt.Errorf("raw chain: %w", err)
					}
					m.ChainRate = append(m.ChainRate, raw.turnsPerSec())
					m.ChainRatio = append(m.ChainRatio, res.turnsPerSec/raw.turnsPerSec())
				}
				return nil
			})
		}
		if err == nil && len(cfg.SweepRuns) > 0 {
			points := sweepPoints(cfg.SweepRuns, cfg.SweepInstances)
			m.Sweep = make([]SweepSample, len(points))
			err = part("B7", func() error {
				for r := range cfg.Reps {
					for i, p := range points {
						rate, err := benchSweep(ctx, s, dir, fmt.Sprintf("b7-%d-%d-%d", p.Runs, p.Instances, r), p, cfg.SweepTurns, cfg)
						if err != nil {
							return err
						}
						m.Sweep[i].Point = p
						m.Sweep[i].Rate = append(m.Sweep[i].Rate, rate)
					}
				}
				return nil
			})
		}
		if serr := stop(); err == nil && serr != nil {
			err = fmt.Errorf("services: %w", serr)
		}
		if err != nil {
			return err
		}
		if cfg.MemoryRuns > 0 && (len(cfg.MemoryModes) == 0 || slices.Contains(cfg.MemoryModes, mode)) {
			if err := part("B6", func() error {
				res, err := benchMemory(ctx, s.b, s.srv.ClientURL(), cfg.Factline, filepath.Join(dir, "b6"), cfg.MemoryRuns, cfg.MemoryPerSuite, 20*time.Minute)
				m.Memory = res
				return err
			}); err != nil {
				return err
			}
		}
		return part("B1", func() error {
			for r := range cfg.Reps {
				res, err := benchAppend(ctx, s.b, r, cfg.AppendRounds[mode])
				if err != nil {
					return err
				}
				m.AppendFL, m.AppendRaw = append(m.AppendFL, res.factline), append(m.AppendRaw, res.raw)
				m.AppendRatio = append(m.AppendRatio, res.factline/res.raw)
			}
			return nil
		})
	})
	return m, err
}
