package grader

import (
	"context"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/services/kit"
)

// WithContainment sets how command instruments are contained (default:
// sandbox.DefaultConfig, every feature at sandbox.DefaultLimits, as the
// runner's default). Its WorkDir is always the grader's work directory.
// What the host grants is probed once, in New, and recorded in every
// command's grade.instrument.
func WithContainment(cfg sandbox.Config) kit.Option {
	return kit.Own("WithContainment", func(c *config) error { c.contain = &cfg; return nil })
}

// probe finds out once which containment the host grants command
// instruments, and says what it cannot give.
func (s *Service) probe() {
	cfg := sandbox.DefaultConfig(s.cfg.workDir)
	if s.cfg.contain != nil {
		cfg = *s.cfg.contain
	}
	s.engine = cfg.Engine
	// What dead graders left here goes before this one adds its own.
	s.reap(context.Background())
	cfg.WorkDir = s.cfg.workDir
	s.containment, s.probeErr = sandbox.Probe(context.Background(), cfg)
	if s.probeErr != nil {
		s.sh.Log.Error("command containment: probe failed; command instruments will be errored", "err", s.probeErr)
		return
	}
	for _, f := range s.containment.Record().Features {
		if f.State == events.ContainmentUnsupported {
			s.sh.Log.Warn("command containment: unsupported on this host", "feature", f.Name, "reason", f.Detail)
		}
	}
}

// Containment is the containment command instruments run under, as the
// probe found it (nil when the probe failed).
func (s *Service) Containment() *events.Containment { return s.containment.Record() }

// summary renders a containment record on one log line: each feature's
// state, with its limit where it has one.
func summary(rec *events.Containment) string {
	if rec == nil {
		return "none: the probe failed"
	}
	parts := make([]string, 0, len(rec.Features))
	for _, f := range rec.Features {
		p := f.Name + "=" + f.State
		if f.Limit > 0 {
			p += ":" + strconv.FormatUint(f.Limit, 10)
		}
		parts = append(parts, p)
	}
	return rec.Provider + " " + strings.Join(parts, " ")
}

// siteKind names the graders' directories in a work dir.
const siteKind = "grader"

// reap removes what dead graders left in the work dir: the copies of
// candidates their commands ran on, those commands' processes and
// leftover files, and their containers (sandbox.Reap). It runs when a
// grader starts and before each grading, so that a grader taking over
// another's work on this host never leaves the dead one's behind. Failing
// to reap is logged, never fatal.
func (s *Service) reap(ctx context.Context) {
	r, err := sandbox.Reap(ctx, s.cfg.workDir, siteKind, s.engine)
	if !r.Empty() {
		s.sh.Log.Info("removed what dead graders left", "dirs", r.Dirs, "containers", r.Containers, "processes", r.Processes, "files", r.Files)
	}
	if err != nil {
		s.sh.Log.Warn("removing what dead graders left failed", "err", err)
	}
}
