package suites

import (
	"errors"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/factline/factline/cases"
)

// Bounds of a suite file (docs/suite.md#bounds). Going past one is refused
// when the suite loads, naming the field and the limit, so that neither the
// submitter nor the meter holds a roster it cannot afford.
const (
	// MaxFileBytes bounds the suite file.
	MaxFileBytes = 1 << 20
	// MaxDescription bounds the description, in bytes.
	MaxDescription = 64 << 10
	// MaxCases bounds the case entries.
	MaxCases = 10_000
	// MaxTreatments bounds the treatment entries.
	MaxTreatments = 100
	// MaxTrials bounds the trials of each case under each treatment.
	MaxTrials = 10_000
	// MaxRuns bounds the roster: cases (of the split) × treatments ×
	// trials.
	MaxRuns = 100_000
)

// checkBounds checks a suite file's bounded fields on its syntax tree,
// before the file is decoded: a count is named with its line, and a count
// out of range is refused before anything is built from it. A file that
// does not decode here is left to the strict decode to report.
func checkBounds(name string, data []byte) error {
	var raw struct {
		Description ast.Node `yaml:"description"`
		Cases       ast.Node `yaml:"cases"`
		Treatments  ast.Node `yaml:"treatments"`
		Trials      ast.Node `yaml:"trials"`
	}
	if yaml.Unmarshal(data, &raw) != nil {
		return nil
	}
	var err error
	if raw.Trials != nil {
		_, err = cases.Count(raw.Trials, 1, MaxTrials, "; leave trials out for 1")
	}
	for _, l := range []struct {
		node ast.Node
		max  int
	}{{raw.Cases, MaxCases}, {raw.Treatments, MaxTreatments}} {
		if seq, ok := l.node.(*ast.SequenceNode); ok && err == nil && len(seq.Values) > l.max {
			err = cases.NodeError(l.node, "%d entries; a suite has at most %d", len(seq.Values), l.max)
		}
	}
	if s, ok := raw.Description.(ast.ScalarNode); ok && err == nil {
		var d string
		if yaml.NodeToValue(s, &d) == nil && len(d) > MaxDescription {
			err = cases.NodeError(s, "%d bytes; the limit is %d", len(d), MaxDescription)
		}
	}
	if err != nil {
		return fromCases(name, cases.YAMLError(name, data, err))
	}
	return nil
}

// fromCases makes a *cases.Error about the suite file a suite *Error.
func fromCases(name string, err error) error {
	var ce *cases.Error
	if errors.As(err, &ce) {
		return &Error{File: ce.File, Line: ce.Line, Field: ce.Field, Msg: ce.Msg}
	}
	return &Error{File: name, Msg: err.Error()}
}
