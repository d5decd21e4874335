package runner

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/factline/factline/services/kit"
)

// handedBack is the runs a runner stopped mid-way because it is shutting
// down (SIGTERM, Ctrl-C, a run command's --timeout): each resumes from
// the log when it is next taken. A runner driving 16 runs at once stops 16
// of them; each said on a warning line of its own buried the one line
// that mattered in a CI log, so the runner says them together, once, as
// it stops (say), each on its own at INFO only.
type handedBack struct {
	mu   sync.Mutex
	runs []string // suite/run
	// listed is how many of the runs the line names (0: every one).
	listed int
}

// add records a run handed back.
func (h *handedBack) add(suite, run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs = append(h.runs, suite+"/"+run)
}

// say logs, once, the runs handed back since the last say, as one
// warning: how many, and which (the first listed of them in order, then
// how many more). Nothing when none was.
func (h *handedBack) say(log *slog.Logger) {
	h.mu.Lock()
	runs := h.runs
	h.runs = nil
	h.mu.Unlock()
	if len(runs) == 0 {
		return
	}
	slices.Sort(runs)
	named := runs
	if h.listed > 0 && len(runs) > h.listed {
		named = runs[:h.listed]
	}
	list := strings.Join(named, ", ")
	if more := len(runs) - len(named); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	log.Warn("the runs in flight stop here and resume from the log", "count", len(runs), "runs", list)
}

// WithHandedBackListed sets how many runs the line a stopping runner logs
// names of those it stopped mid-way (default 0: every one; they resume
// from the log): a run command, whose own message says how to go on,
// names the first few; a fleet's runner, whose operator wants to know
// which runs another runner takes over, names them all. A negative count
// is refused.
func WithHandedBackListed(n int) kit.Option {
	return kit.OwnIf("WithHandedBackListed", n >= 0, fmt.Sprintf("the count %d is negative", n),
		func(c *config) { c.handedBackListed = n })
}
