package fleet

import (
	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
)

// OneGrader makes a grader that consumes nothing, for an operator's one-off
// action through its Go API (factline regrade calls its Regrade). Its
// facts are a grader's like any other's.
func OneGrader(b *bus.Bus, opts ...kit.Option) (*grader.Service, error) {
	return grader.New(b, opts...)
}

// OneMeter makes a meter that consumes nothing, for an operator's one-off
// action through its Go API (factline retry calls its Retry).
func OneMeter(b *bus.Bus, opts ...kit.Option) (*meter.Service, error) { return meter.New(b, opts...) }
