package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// finding is what probing the host found for one configuration: the
// features in force, what the probe commands saw, and why each refused
// feature was refused. Probe makes each caller's Containment from it, in
// the caller's work dir.
type finding struct {
	c           Containment // the features in force; no engine, sweep or record
	got, base   probed      // all features together; none
	root        bool
	unsupported map[string]string // feature: why its probe failed
	dir         string            // the work dir it was probed in
	timedOut    bool              // a probe command timed out: the answer may be the load's, not the host's
}

// containment is the Containment the finding gives a caller asking for
// cfg in dir: the record, and the places swept for what an attempt's uid
// left, name the caller's work dir.
func (f *finding) containment(cfg Config, dir string) *Containment {
	c := f.c
	c.engine = cfg.Engine
	unsupported := maps.Clone(f.unsupported)
	if why, ok := unsupported["uid"]; ok {
		unsupported["uid"] = why + fmt.Sprintf(" (can every user reach the work dir %s?)", dir)
	}
	c.record = c.describe(cfg, f.got, f.base, f.root, unsupported)
	// What an attempt's uid leaves outside its directories is searched for
	// unless nothing outside them was writable.
	if c.dropUID {
		tmp, _ := c.record.Feature(FeaturePrivateTmp)
		ro, _ := c.record.Feature(FeatureReadOnlyHost)
		if tmp.State != events.ContainmentActive || ro.State != events.ContainmentActive {
			c.sweep = append(slices.Clone(sharedPlaces), dir)
		}
	}
	return &c
}

// names reports whether any reason the finding keeps names dir (a path
// below it, in an error of a probe command): such a finding speaks of its
// own work dir only.
func (f *finding) names(dir string) bool {
	for _, why := range f.unsupported {
		if strings.Contains(why, dir) {
			return true
		}
	}
	return false
}
