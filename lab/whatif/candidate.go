package whatif

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// Candidate is a stall policy to try: a treatment's stall block, standing
// in for the one each run was recorded under (see Replay). The candidate
// named Recorded keeps each run's own thresholds.
type Candidate struct {
	Name  string            `yaml:"name,omitempty" json:"name"`
	Stall cases.StallPolicy `yaml:"stall" json:"stall"`
}

// Recorded is the candidate that changes nothing: replaying under it
// checks the replay against the recording.
const Recorded = "recorded"

// PolicyFile says what a candidate policy file holds, for a message that
// asks for one: ParseCandidate reads it.
const PolicyFile = "a YAML file holding a stall: block as a treatment writes it (any stall threshold; what it leaves out keeps the case's and the defaults) and an optional name: (default: the file's name)"

// ExamplePolicy is a policy file the repository ships, relative to its
// root: the calibration suite's defaults with three retries.
const ExamplePolicy = "examples/calibration/policies/patient.yaml"

// ParseCandidate reads a candidate policy file: a stall block as a case
// writes it, and an optional name (default: the file's base name without
// its extension).
//
//	name: patient
//	stall:
//	  repeated_observation: 5
//	  repair_budget: 3
func ParseCandidate(file string, data []byte) (Candidate, error) {
	var c Candidate
	if err := cases.DecodeYAML(file, data, &c); err != nil {
		return Candidate{}, err
	}
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := events.ValidateToken("name", c.Name); err != nil {
		// The error's field names it: the check's own name for it would
		// name it twice.
		msg := err.Error()
		var fe *events.FieldError
		if errors.As(err, &fe) {
			msg = fe.Reason
		}
		return Candidate{}, &cases.Error{File: file, Field: "name", Msg: msg}
	}
	if c.Name == Recorded {
		return Candidate{}, &cases.Error{File: file, Field: "name", Msg: fmt.Sprintf("%q names the recorded policy, which every report includes", Recorded)}
	}
	if err := c.Stall.Check("stall"); err != nil {
		var e *cases.Error
		if errors.As(err, &e) {
			e.File = file
			return Candidate{}, e
		}
		return Candidate{}, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}
