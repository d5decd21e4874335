package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// ScalingConfig shapes the partition benchmark (docs/scaling.md): raw
// appends to one stream against the same appends spread over several
// streams by a subject mapping, on a three-node loopback cluster per
// fsync mode.
type ScalingConfig struct {
	// Dir holds the clusters' stores. Required.
	Dir string
	// Modes are the fsync modes; each gets a cluster of its own, all up at
	// once, and the configurations of every mode are measured interleaved.
	Modes []bus.Durability
	// Points are the stream configurations measured in each repetition.
	Points []ScalingPoint
	// Reps repetitions of every (mode, point).
	Reps int
	// Runs are appended to at once, each run in a suite of its own (the
	// partition key); Rounds append one fact to every run each.
	Runs, Rounds int
	// Limit caps one measurement: no round starts after it.
	Limit time.Duration
	// Publishers are the client connections the runs are spread over,
	// connected to the nodes in turn.
	Publishers int
	// Progress, when set, receives a line per measurement.
	Progress io.Writer
}

// ScalingPoint is one stream configuration: Streams partitions, their
// leaders on different nodes, or all on the first node with OneLeader.
type ScalingPoint struct {
	Streams   int
	OneLeader bool
}

func (p ScalingPoint) String() string {
	switch {
	case p.Streams == 1:
		return "1 stream"
	case p.OneLeader:
		return fmt.Sprintf("%d streams, leaders on one node", p.Streams)
	}
	return fmt.Sprintf("%d streams, leaders on %d nodes", p.Streams, min(p.Streams, scalingNodes))
}

// ScalingSample is one measurement.
type ScalingSample struct {
	Mode  bus.Durability
	Point ScalingPoint
	Rep   int
	// Facts were acknowledged in Elapsed; PerStream counts them by the
	// stream that acknowledged them (the partitions' balance).
	Facts     int
	Elapsed   time.Duration
	PerStream map[string]int
	Leaders   []string
	// Load1 is the one-minute load average when the measurement ended.
	Load1 float64
}

// Rate is the sample's acknowledged facts per second.
func (s ScalingSample) Rate() float64 { return float64(s.Facts) / s.Elapsed.Seconds() }

// RunScaling starts a three-node loopback cluster per mode and measures
// every point in every mode, repetition by repetition, interleaved.
func RunScaling(ctx context.Context, cfg ScalingConfig) ([]ScalingSample, error) {
	if cfg.Dir == "" || cfg.Reps < 1 || cfg.Runs < 1 || cfg.Rounds < 1 || cfg.Limit <= 0 || cfg.Publishers < 1 || len(cfg.Points) == 0 {
		return nil, errors.New("scaling: need Dir, Points, and Reps, Runs, Rounds, Limit, Publishers above zero")
	}
	var parts []int
	for _, p := range cfg.Points {
		if p.Streams < 1 {
			return nil, fmt.Errorf("scaling: point %+v has no stream", p)
		}
		parts = append(parts, p.Streams)
	}
	type cluster struct {
		nodes []*bus.Embedded
		admin *nats.Conn
		js    jetstream.JetStream
		pubs  []jetstream.JetStream
	}
	clusters := map[bus.Durability]*cluster{}
	defer func() {
		for _, c := range clusters {
			for _, n := range c.nodes {
				n.Shutdown()
			}
		}
	}()
	for _, mode := range cfg.Modes {
		nodes, err := startScalingCluster(ctx, filepath.Join(cfg.Dir, string(mode)), mode, parts)
		if err != nil {
			return nil, fmt.Errorf("scaling: %s cluster: %w", mode, err)
		}
		c := &cluster{nodes: nodes}
		clusters[mode] = c
		for k := range cfg.Publishers + 1 {
			nc, err := nats.Connect(nodes[k%len(nodes)].ClientURL())
			if err != nil {
				return nil, fmt.Errorf("scaling: connect to %s node %d: %w", mode, k%len(nodes)+1, err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return nil, err
			}
			if k == cfg.Publishers {
				c.admin, c.js = nc, js
			} else {
				c.pubs = append(c.pubs, js)
			}
		}
		if err := awaitMetaLeader(ctx, c.js); err != nil {
			return nil, fmt.Errorf("scaling: %s cluster: %w", mode, err)
		}
	}
	data, err := scalingFact()
	if err != nil {
		return nil, err
	}
	var out []ScalingSample
	for rep := range cfg.Reps {
		for _, mode := range cfg.Modes {
			c := clusters[mode]
			for _, p := range cfg.Points {
				leaderNodes := c.nodes
				if p.OneLeader {
					leaderNodes = c.nodes[:1]
				}
				leaders, err := makePartitions(ctx, c.js, c.admin, leaderNodes, p.Streams)
				if err != nil {
					return out, fmt.Errorf("scaling: %s %s: %w", mode, p, err)
				}
				s, err := appendPartitioned(ctx, c.pubs, p.Streams, fmt.Sprintf("r%d", rep), data, cfg)
				for i := range p.Streams {
					_ = c.js.DeleteStream(ctx, partitionStream(p.Streams, i))
				}
				if err != nil {
					return out, fmt.Errorf("scaling: %s %s: %w", mode, p, err)
				}
				s.Mode, s.Point, s.Rep, s.Leaders, s.Load1 = mode, p, rep, leaders, load1()
				out = append(out, s)
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "rep %d, fsync %s, %s (leaders %s): %.0f facts/s (%d in %v; per stream %v; load %.1f)\n",
						rep+1, mode, p, strings.Join(leaders, ","), s.Rate(), s.Facts, s.Elapsed.Round(time.Millisecond), s.PerStream, s.Load1)
				}
			}
		}
	}
	return out, nil
}

// awaitMetaLeader waits until the cluster answers JetStream's account
// info: streams can be made once it has elected its meta leader.
func awaitMetaLeader(ctx context.Context, js jetstream.JetStream) error {
	var err error
	for range 60 {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("no JetStream meta leader: %w", err)
}

// scalingFact is the body every scaling append carries: an encoded
// turn.completed with one dispatch, B1's typical fact.
func scalingFact() ([]byte, error) {
	f, err := turnCompleted("scale", "run", 1)
	if err != nil {
		return nil, err
	}
	return events.EncodeStored(f)
}

// appendPartitioned appends rounds of one fact to each of cfg.Runs runs,
// every run a suite of its own under configuration n's root, with
// factline's headers: a message ID and the run-wide expected last
// sequence on s<n>.<suite>.<run>.>. Each round is published without
// waiting, then its acknowledgements collected (as B1 does); a rejected
// append fails the measurement.
func appendPartitioned(ctx context.Context, pubs []jetstream.JetStream, n int, tag string, data []byte, cfg ScalingConfig) (ScalingSample, error) {
	root := partitionRoot(n)
	last := make([]uint64, cfg.Runs)
	s := ScalingSample{PerStream: map[string]int{}}
	t0 := time.Now()
	for round := 0; round < cfg.Rounds && time.Since(t0) < cfg.Limit; round++ {
		acks := make([]jetstream.PubAckFuture, cfg.Runs)
		for r := range cfg.Runs {
			suite := fmt.Sprintf("%su%d", tag, r)
			m := &nats.Msg{Subject: root + "." + suite + ".run." + string(events.KindTurnCompleted), Data: data, Header: nats.Header{}}
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s/run/%d", suite, round))
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last[r], 10))
			m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, root+"."+suite+".run.>")
			a, err := pubs[r%len(pubs)].PublishMsgAsync(m)
			if err != nil {
				return s, fmt.Errorf("publish round %d run %d: %w", round, r, err)
			}
			acks[r] = a
		}
		for r, a := range acks {
			select {
			case ack := <-a.Ok():
				last[r] = ack.Sequence
				s.PerStream[ack.Stream]++
				s.Facts++
			case err := <-a.Err():
				return s, fmt.Errorf("append round %d run %d: %w", round, r, err)
			case <-ctx.Done():
				return s, ctx.Err()
			}
		}
	}
	s.Elapsed = time.Since(t0)
	return s, nil
}

// load1 is the one-minute load average (0 where /proc has none).
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// ScalingMarkdown tabulates samples by mode and point: the median facts/s
// with its spread, the median against the one-stream point's in the same
// mode, and the load averages the measurements ended at.
func ScalingMarkdown(samples []ScalingSample, m Machine, command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d CPUs (%s), Go %s, nats-server %s; `%s`.\n\n", time.Now().UTC().Format("2006-01-02 15:04"),
		m.CPUs, m.Model, strings.TrimPrefix(m.Go, "go"), m.NATS, command)
	b.WriteString("| fsync | streams | facts/s, median (min–max) | ÷ 1 stream | load average (1 min) |\n|---|---|---|---|---|\n")
	type key struct {
		mode  bus.Durability
		point ScalingPoint
	}
	var order []key
	rates := map[key]Sample{}
	loads := map[key]Sample{}
	for _, s := range samples {
		k := key{s.Mode, s.Point}
		if _, ok := rates[k]; !ok {
			order = append(order, k)
		}
		rates[k] = append(rates[k], s.Rate())
		loads[k] = append(loads[k], s.Load1)
	}
	for _, k := range order {
		r := rates[k]
		lo, hi := r.Spread()
		rel := "—"
		if one, ok := rates[key{k.mode, ScalingPoint{Streams: 1}}]; ok && k.point.Streams != 1 {
			rel = fmt.Sprintf("%.2f", r.Median()/one.Median())
		}
		llo, lhi := loads[k].Spread()
		fmt.Fprintf(&b, "| %s | %s | %s (%s–%s) | %s | %.1f–%.1f |\n", k.mode, k.point, num(r.Median()), num(lo), num(hi), rel, llo, lhi)
	}
	return b.String()
}
