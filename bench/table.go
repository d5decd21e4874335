package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/factline/factline/bus"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs  int
	Model string
	Go    string
	NATS  string
}

// ThisMachine reads the CPU count and model (from /proc/cpuinfo).
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Model: "unknown", Go: runtime.Version(), NATS: natsserver.VERSION}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// num formats a rate with thousands separators.
func num(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func rate(s Sample) string {
	lo, hi := s.Spread()
	return fmt.Sprintf("%s (%s–%s)", num(s.Median()), num(lo), num(hi))
}

func msec(s Sample) string {
	lo, hi := s.Spread()
	return fmt.Sprintf("%.2f ms (%.2f–%.2f)", s.Median(), lo, hi)
}

func ratio(s Sample) string {
	lo, hi := s.Spread()
	return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median(), lo, hi)
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// Markdown renders the report: one table per fsync mode, medians with the
// spread (smallest–largest of the repetitions) in brackets, each ratio and
// its goal, then B6 per service.
func (r Report) Markdown(m Machine, command string) string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "Measured %s UTC on %d CPUs (%s), Go %s, nats-server %s embedded; the whole run took %v.\n\n",
		r.Started.Format("2006-01-02 15:04"), m.CPUs, m.Model, strings.TrimPrefix(m.Go, "go"), m.NATS, r.Took.Round(time.Second))
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", command)
	fmt.Fprintf(&b, "Each figure is the median of %d repetitions, (smallest–largest) in brackets; each ratio is the median of the per-repetition ratios except B2's second (median B2 rate ÷ median B1 raw rate, the baseline before issue 24). The stream B4 and B5 read (%s facts) was written once with interval fsync in %v.\n\n",
		c.Reps, num(float64(c.FillFacts)), r.Fill.Round(time.Second))
	for _, mr := range r.Modes {
		fmt.Fprintf(&b, "### fsync %s\n\n", mr.Mode)
		b.WriteString("| figure | factline | raw baseline | ratio | goal | met |\n|---|---|---|---|---|---|\n")
		if len(mr.AppendRatio) > 0 {
			fmt.Fprintf(&b, "| B1 append, pipelined over 1,000 runs (facts/s) | %s | %s | %s | ≥ 0.8 | %s |\n",
				rate(mr.AppendFL), rate(mr.AppendRaw), ratio(mr.AppendRatio), met(mr.AppendRatio.Median() >= 0.8))
		}
		if len(mr.Turns) > 0 {
			// The ratio to the raw chain is the goal; the old ratio to B1's
			// pipelined bare publishes stays beside it, for comparison with
			// earlier tables.
			old := "B1 raw: not run"
			if len(mr.AppendRaw) > 0 {
				old = fmt.Sprintf("%.2f of B1 raw (%s facts/s)", mr.Turns.Median()/mr.AppendRaw.Median(), num(mr.AppendRaw.Median()))
			}
			fmt.Fprintf(&b, "| B2 end to end, %d runs × %d turns, 5 services (turns/s; facts/s, %s facts a suite) | %s; %s facts/s | raw chain of B3, %d runs at once: %s | %s; %s | ≥ 0.5 | %s |\n",
				c.TurnRuns, c.TurnTurns, num(float64(mr.TurnsFacts)), rate(mr.TurnRate), rate(mr.Turns), c.TurnRuns, rate(mr.ChainRate),
				ratio(mr.ChainRatio), old, met(mr.ChainRatio.Median() >= 0.5))
			goal := turnRateGoal[mr.Mode]
			fmt.Fprintf(&b, "| B2 turns/s, %d runs × %d turns (issue 24's goal) | %s | — | — | ≥ %s | %s |\n",
				c.TurnRuns, c.TurnTurns, rate(mr.TurnRate), num(goal), met(mr.TurnRate.Median() >= goal))
			fmt.Fprintf(&b, "| B2 disk per turn, %d distinct runs (bytes the streams grew by ÷ turns): facts / blobs; of the facts, all headers / `Factline-Prev` | %s / %s; %s / %s | — | — | facts ≤ 3,072 | %s |\n",
				c.TurnRuns, rate(mr.FactBytes), rate(mr.BlobBytes), rate(mr.HeaderBytes), rate(mr.PrevBytes), met(mr.FactBytes.Median() <= 3072))
			if mr.CompressedRatio > 0 {
				packed := mr.FactBytes.Median() * mr.CompressedRatio
				blocks := "FACTS' sealed blocks"
				if !mr.CompressedSealed {
					blocks = "FACTS' one block (none sealed yet), compressed as it stands"
				}
				fmt.Fprintf(&b, "| B2 disk per turn with `factline setup --compress`: facts × what the server's block compression makes of %s (%.2f) | %s | — | — | facts ≤ 3,072 | %s |\n",
					blocks, mr.CompressedRatio, num(packed), met(packed <= 3072))
			}
		}
		if len(mr.LatRatio) > 0 {
			fmt.Fprintf(&b, "| B3 per-turn latency, one run of %d turns: p50 / p99 | %s / %s | %s / %s | p50: %s | p50 ≤ 2 | %s |\n",
				c.LatencyTurns, msec(mr.LatP50), msec(mr.LatP99), msec(mr.RawP50), msec(mr.RawP99), ratio(mr.LatRatio), met(mr.LatRatio.Median() <= 2))
		}
		if len(mr.LongRatio) > 0 {
			fmt.Fprintf(&b, "| B8 turn cost by run length, one run of %d turns: p50 of turns %d–%d / of turns %d–%d | %s / %s | — | %s | ≤ 1.2 | %s |\n",
				c.LongTurns, longLateFrom, longLateTo, longEarlyFrom, longEarlyTo, msec(mr.LongLate), msec(mr.LongEarly), ratio(mr.LongRatio), met(mr.LongRatio.Median() <= 1.2))
			fmt.Fprintf(&b, "| B8 request blobs per turn, one run of %d turns (bytes the blob bucket grew by ÷ turns) | %s | — | — | — | — |\n",
				c.LongTurns, rate(mr.LongBlobBytes))
		}
		for i, sw := range mr.Sweep {
			if len(sw.Rate) == 0 {
				continue
			}
			// Each point should beat the one before it: more runs at once
			// (one instance each), or more instances at the largest
			// concurrency than one.
			prev := Sample(nil)
			if sw.Point.Instances == 1 && i > 0 {
				prev = mr.Sweep[i-1].Rate
			} else if sw.Point.Instances > 1 {
				for _, o := range mr.Sweep {
					if o.Point.Instances == 1 && o.Point.Runs == sw.Point.Runs {
						prev = o.Rate
					}
				}
			}
			grows, ok := "—", "—"
			if len(prev) > 0 {
				grows, ok = fmt.Sprintf("> %s", num(prev.Median())), met(sw.Rate.Median() > prev.Median())
			}
			fmt.Fprintf(&b, "| B7 turns/s, %d runs at once × %d turns, %d instance(s) of each service | %s | — | — | %s | %s |\n",
				sw.Point.Runs, c.SweepTurns, sw.Point.Instances, rate(sw.Rate), grows, ok)
		}
		if len(mr.ReplayRatio) > 0 {
			fmt.Fprintf(&b, "| B4 replay of %s facts into the history projection (facts/s) | %s | %s | %s | ≥ 0.7 | %s |\n",
				num(float64(c.FillFacts)), rate(mr.ReplayFL), rate(mr.ReplayRaw), ratio(mr.ReplayRatio), met(mr.ReplayRatio.Median() >= 0.7))
		}
		if len(mr.LoadRatio) > 0 {
			fmt.Fprintf(&b, "| B5 load one run of %d facts among %s: p50 / p99 | %s / %s | one direct get: %s / %s | p50: %s | p50 ≤ 20 | %s |\n",
				fillRunLen, num(float64(c.FillFacts)), msec(mr.LoadP50), msec(mr.LoadP99), msec(mr.GetP50), msec(mr.GetP99), ratio(mr.LoadRatio), met(mr.LoadRatio.Median() <= 20))
		}
		if mm := mr.Memory; mm.runs > 0 {
			worst, g := mm.growth()
			fmt.Fprintf(&b, "| B6 RSS growth after %s completed runs (MiB, worst service) | %s: %.1f → %.1f (+%.1f) | before the runs | — | ≤ 64 MiB | %s |\n",
				num(float64(mm.runs)), worst, mm.before[worst], mm.after[worst], g, met(g <= 64))
		}
		if mr.Memory.runs == 0 && c.MemoryRuns > 0 {
			fmt.Fprintf(&b, "| B6 RSS growth after %s completed runs | not run with fsync %s: see --b6-modes | | — | ≤ 64 MiB | — |\n",
				num(float64(c.MemoryRuns)), mr.Mode)
		}
		b.WriteString("\n")
		if mm := mr.Memory; mm.runs > 0 {
			fmt.Fprintf(&b, "B6, each service a `factline serve --services NAME` process on loopback; %s runs took %v (%.0f runs/s):\n\n",
				num(float64(mm.runs)), mm.elapsed.Round(time.Second), float64(mm.runs)/mm.elapsed.Seconds())
			b.WriteString("| service | RSS before (MiB) | RSS after (MiB) | growth (MiB) | Go heap in use after (MiB) |\n|---|---|---|---|---|\n")
			for _, n := range serviceNames {
				fmt.Fprintf(&b, "| %s | %.1f | %.1f | %+.1f | %.1f |\n", n, mm.before[n], mm.after[n], mm.after[n]-mm.before[n], mm.heap[n])
			}
			b.WriteString("\n")
		}
		var parts []string
		for _, p := range []string{"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"} {
			if d, ok := mr.Took[p]; ok {
				parts = append(parts, fmt.Sprintf("%s %v", p, d.Round(100*time.Millisecond)))
			}
		}
		fmt.Fprintf(&b, "Time per part: %s.\n\n", strings.Join(parts, ", "))
	}
	return b.String()
}

// turnRateGoal is issue 24's goal for B2's turns/s on a 2-core machine,
// by fsync mode.
var turnRateGoal = map[bus.Durability]float64{bus.SyncAlways: 300, bus.SyncInterval: 1200}

// Markers delimit the generated part of docs/benchmarks.md.
const (
	BeginMarker = "<!-- factline-bench: begin (generated by make bench; edits here are overwritten) -->"
	EndMarker   = "<!-- factline-bench: end -->"
)

// Splice puts generated text between the markers of doc, or appends it
// with the markers when doc has none.
func Splice(doc, generated string) string {
	block := BeginMarker + "\n\n" + generated + EndMarker
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return strings.TrimRight(doc, "\n") + "\n\n" + block + "\n"
	}
	return doc[:i] + block + doc[j+len(EndMarker):]
}
