package cases

// WriteNeedID names the requirement a case that needs an applied change to
// the workspace gets. The staller and the stop decider both judge progress
// against it, so its name lives with the case rather than in either.
const WriteNeedID = "workspace-write"

// Need is one thing done must show: a declared requirement, a required check
// that no requirement names, or an applied change to the workspace.
type Need struct {
	ID string
	// Check is the declared check that proves it; empty with Write false
	// means cited evidence proves it.
	Check string
	// Write says an applied change to the workspace proves it.
	Write bool
}

// Needs lists what done must show, in a fixed order: the declared
// requirements, then each required check no requirement names (renamed
// "<id>-check" when a requirement already took its ID), then the write need
// when the case requires a write and no requirement took its name.
func (c *Case) Needs() []Need {
	var out []Need
	named := map[string]bool{}
	ids := map[string]bool{}
	for _, r := range c.Requirements {
		out = append(out, Need{ID: r.ID, Check: r.Check})
		named[r.Check], ids[r.ID] = true, true
	}
	for _, ch := range c.Checks {
		if !ch.IsRequired() || named[ch.ID] {
			continue
		}
		id := ch.ID
		if ids[id] {
			id += "-check"
		}
		ids[id] = true
		out = append(out, Need{ID: id, Check: ch.ID})
	}
	if c.RequiresWriteOrDefault() && !ids[WriteNeedID] {
		out = append(out, Need{ID: WriteNeedID, Write: true})
	}
	return out
}
