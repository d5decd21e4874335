package view

import (
	"encoding/json"
	"fmt"
	"time"
)

// reportView is the part of the meter's report JSON the suite page shows,
// decoded from the very bytes 'factline report --json' prints. Reading the
// JSON rather than the Go type keeps the page on what the report says:
// a total the meter leaves null stays unknown here, and a field it adds
// or drops changes the page without a second definition of the numbers.
type reportView struct {
	Suite         string   `json:"suite"`
	Name          string   `json:"name"`
	Split         string   `json:"split"`
	SpecDigest    string   `json:"spec_digest"`
	Trials        uint32   `json:"trials"`
	Cases         []string `json:"cases"`
	Required      []string `json:"required"`
	ValidOutcomes []string `json:"valid_outcomes"`
	Complete      bool     `json:"complete"`
	Smoke         *bool    `json:"smoke"`
	// StoppedEarly is the suite.stopped the report names, when the
	// suite's stopping rule settled its comparison before the roster ran.
	StoppedEarly *struct {
		Comparison string
		Reason     string
		Pairs      uint32
	} `json:"stopped_early"`
	// Controlled are the operator's controls of the suite
	// (suite.controlled), ControlState where they left it, and NotRun the
	// attempts that never ran.
	Controlled []struct {
		ID     string    `json:"id"`
		Action string    `json:"action"`
		From   string    `json:"from"`
		Reason string    `json:"reason"`
		At     time.Time `json:"at"`
	} `json:"controlled"`
	ControlState string `json:"control_state"`
	NotRun       int    `json:"not_run"`
	Method       struct {
		Z                  float64 `json:"z"`
		Interval           string  `json:"interval"`
		BootstrapResamples int     `json:"bootstrap_resamples"`
		BootstrapSeed      uint64  `json:"bootstrap_seed"`
	} `json:"method"`
	Treatments  []treatmentView  `json:"treatments"`
	Comparisons []comparisonView `json:"comparisons"`
}

type interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// treatmentView is one treatment's row. Raw holds each field's JSON text,
// which the page puts beside the number it shows (data-value) so that a
// test can hold the page to the report.
type treatmentView struct {
	Treatment   string    `json:"treatment"`
	Planned     int       `json:"planned"`
	Graded      int       `json:"graded"`
	Passed      int       `json:"passed"`
	PassRate    *float64  `json:"pass_rate"`
	Wilson      *interval `json:"wilson"`
	ClusteredSE *float64  `json:"clustered_se"`
	PassAtK     []struct {
		K     int     `json:"k"`
		Value float64 `json:"value"`
		Cases int     `json:"cases"`
	} `json:"pass_at_k"`
	Usage struct {
		Tokens        *uint64 `json:"tokens"`
		TokensKnown   int     `json:"tokens_known"`
		TokensUnknown int     `json:"tokens_unknown"`
		Cost          *uint64 `json:"cost"`
		CostKnown     int     `json:"cost_known"`
		CostUnknown   int     `json:"cost_unknown"`
		WallMillis    uint64  `json:"wall_millis"`
		WallKnown     int     `json:"wall_known"`
	} `json:"usage"`
	Raw map[string]json.RawMessage `json:"-"`
	// Scores are the report's per-scorer summaries of the treatment.
	Scores []scoreView `json:"scores"`
}

// scoreView is one scorer's summary of a treatment, as the report has it.
type scoreView struct {
	Scorer        string    `json:"scorer"`
	Min           float64   `json:"min"`
	Max           float64   `json:"max"`
	LowerIsBetter bool      `json:"lower_is_better"`
	Values        int       `json:"values"`
	Missing       int       `json:"missing"`
	Clusters      int       `json:"clusters"`
	Mean          *float64  `json:"mean"`
	ClusteredSE   *float64  `json:"clustered_se"`
	Interval      *interval `json:"interval"`
}

type comparisonView struct {
	A           string   `json:"a"`
	B           string   `json:"b"`
	Label       string   `json:"label"`
	Differences []string `json:"differences"`
	Note        string   `json:"note"`
	Pairs       int      `json:"pairs"`
	RateA       *float64 `json:"rate_a"`
	RateB       *float64 `json:"rate_b"`
	Difference  *struct {
		Estimate  float64  `json:"estimate"`
		Interval  interval `json:"interval"`
		Clusters  int      `json:"clusters"`
		Resamples int      `json:"resamples"`
	} `json:"difference"`
	McNemar *struct {
		OnlyA int     `json:"only_a"`
		OnlyB int     `json:"only_b"`
		P     float64 `json:"p"`
	} `json:"mcnemar"`
	Scores []struct {
		Scorer     string `json:"scorer"`
		Pairs      int    `json:"pairs"`
		Clusters   int    `json:"clusters"`
		Difference *struct {
			Estimate float64  `json:"estimate"`
			Interval interval `json:"interval"`
		} `json:"difference"`
		Wilcoxon *struct {
			P float64 `json:"p"`
		} `json:"wilcoxon"`
		Withheld string `json:"withheld"`
	} `json:"scores"`
}

// countColumns are the treatment table's count columns, in the order of
// 'factline report': each shown when the report has the field.
var countColumns = []struct{ Field, Head string }{
	{"planned", "planned"}, {"started", "started"}, {"ended", "ended"}, {"graded", "graded"},
	{"passed", "passed"}, {"failed", "failed"}, {"pending", "pending"}, {"invalid", "invalid"},
	{"abstained", "abstained"}, {"excluded", "excluded"}, {"disputed", "disputed"},
	{"harness_errors", "harness errors"}, {"awaiting", "awaiting"}, {"conflicted", "conflicted"},
}

// decodeReport reads the report JSON a suite page carries.
func decodeReport(js []byte) (*reportView, error) {
	var r reportView
	if err := json.Unmarshal(js, &r); err != nil {
		return nil, fmt.Errorf("view: decode the report: %w", err)
	}
	var raw struct {
		Treatments []map[string]json.RawMessage `json:"treatments"`
	}
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("view: decode the report: %w", err)
	}
	for i := range r.Treatments {
		if i < len(raw.Treatments) {
			r.Treatments[i].Raw = raw.Treatments[i]
		}
	}
	return &r, nil
}

// HasScores reports whether some treatment of the report has scores.
func (r *reportView) HasScores() bool { return hasScores(r) }

func hasScores(r *reportView) bool {
	for _, t := range r.Treatments {
		if len(t.Scores) > 0 {
			return true
		}
	}
	return false
}
