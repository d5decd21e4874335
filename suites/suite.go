// Package suites reads and checks suite files (docs/suite.md): the roster
// of cases, the treatments they run under, the number of trials, the split,
// the required instruments and the valid outcomes. It loads the cases and
// treatments a suite names, publishes them as blobs, builds the
// suite.submitted fact that fixes the roster, and computes each attempt's
// agent identity.
package suites

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/fileerr"
)

// File is a suite file as written.
type File struct {
	// Name names the suite; it is the suite's subject token, so letters,
	// digits, '-' and '_'.
	Name string `yaml:"name" json:"name"`
	// Description says what the suite measures.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Split is the split the suite measures (default "dev"). Cases tagged
	// with another split are left out of the roster.
	Split string `yaml:"split,omitempty" json:"split"`
	// Cases are the case files, relative to the suite file.
	Cases []CaseEntry `yaml:"cases" json:"cases"`
	// Treatments are the treatment files, relative to the suite file.
	Treatments []TreatmentEntry `yaml:"treatments" json:"treatments"`
	// Trials is how many attempts each case gets under each treatment
	// (default 1).
	Trials uint32 `yaml:"trials,omitempty" json:"trials"`
	// Required lists instrument IDs every case must declare as required.
	Required []string `yaml:"required,omitempty" json:"required,omitempty"`
	// ValidOutcomes are the run statuses whose attempts count (default
	// DefaultValidOutcomes); attempts that end otherwise are excluded.
	ValidOutcomes []events.RunStatus `yaml:"valid_outcomes,omitempty" json:"valid_outcomes"`
	// Inputs widens where input files may come from (by default only the
	// suite file's directory).
	Inputs Inputs `yaml:"inputs,omitempty" json:"inputs,omitempty"`
	// Dataset, when set, makes cases from the records of a data file,
	// after the case files listed under cases (see Dataset).
	Dataset *Dataset `yaml:"dataset,omitempty" json:"dataset,omitempty"`
	// Stopping, when set, stops the suite early once one comparison is
	// settled (see Stopping).
	Stopping *Stopping `yaml:"stopping,omitempty" json:"stopping,omitempty"`
}

// CaseEntry names one case file of the roster.
type CaseEntry struct {
	Path string `yaml:"path" json:"path"`
	// Split tags the case (default: the suite's split).
	Split string `yaml:"split,omitempty" json:"split,omitempty"`
}

// TreatmentEntry names one treatment file.
type TreatmentEntry struct {
	Path string `yaml:"path" json:"path"`
}

// DefaultSplit is the split of a suite that names none.
const DefaultSplit = "dev"

// DefaultValidOutcomes are the run statuses that count when a suite names
// none: every honest ending. A cancelled run and a harness error say
// nothing about the agent, so they are excluded (and reported as such).
var DefaultValidOutcomes = []events.RunStatus{events.RunDone, events.RunBlocked, events.RunIncomplete,
	events.RunExhausted, events.RunNeedsHuman}

var allStatuses = []events.RunStatus{events.RunDone, events.RunBlocked, events.RunIncomplete, events.RunExhausted,
	events.RunCancelled, events.RunNeedsHuman, events.RunErrored}

// Error is a problem in a suite file, located as precisely as the parser
// allows: "<file>[:<line>][: <field>]: <message>", the field a path such
// as cases[1].path.
type Error = fileerr.Error[suiteFile]

// ErrInvalid matches every *Error (and *DataError) with errors.Is.
var ErrInvalid = errors.New("invalid suite")

// suiteFile makes Error the problem of a suite file.
type suiteFile struct{}

func (suiteFile) Invalid() error { return ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// tokenErr reports a bad subject token at field, without repeating the
// field's name.
func tokenErr(field string, err error) error {
	var fe *events.FieldError
	if errors.As(err, &fe) {
		return fieldErr(field, "%s", fe.Reason)
	}
	return fieldErr(field, "%v", err)
}

// Parse parses suite YAML and checks what it can without reading the files
// it names; name is used in errors. Unknown keys are refused.
func Parse(name string, data []byte) (*File, error) {
	if err := checkBounds(name, data); err != nil {
		return nil, err
	}
	var f File
	if err := cases.DecodeYAML(name, data, &f); err != nil {
		return nil, fromCases(name, err)
	}
	if err := f.normalise(); err != nil {
		var se *Error
		if errors.As(err, &se) {
			se.File = name
		}
		locate(err, name, data)
		return nil, err
	}
	return &f, nil
}

// locate gives an error of the suite file the line of the key it is about
// (the nearest enclosing one when the key is missing), as a case file's
// errors have it: a suite's checks name a field, which in a long file is
// still a search.
func locate(err error, file string, data []byte) {
	var se *Error
	if errors.As(err, &se) && se.File == file && se.Line == 0 && se.Field != "" {
		se.Line = cases.FieldLine(data, se.Field)
	}
}

func (f *File) normalise() error {
	if err := events.ValidateToken("name", f.Name); err != nil {
		return tokenErr("name", err)
	}
	if f.Split == "" {
		f.Split = DefaultSplit
	}
	if err := events.ValidateToken("split", f.Split); err != nil {
		return tokenErr("split", err)
	}
	if len(f.Cases) == 0 && f.Dataset == nil {
		return fieldErr("cases", "required: at least one case file, or a dataset")
	}
	if f.Dataset != nil {
		if err := f.Dataset.normalise("dataset"); err != nil {
			return err
		}
	}
	for i, c := range f.Cases {
		if c.Path == "" {
			return fieldErr(fmt.Sprintf("cases[%d].path", i), "required")
		}
		if c.Split != "" {
			if err := events.ValidateToken("split", c.Split); err != nil {
				return tokenErr(fmt.Sprintf("cases[%d].split", i), err)
			}
		}
	}
	if len(f.Treatments) == 0 {
		return fieldErr("treatments", "required: at least one treatment file")
	}
	for i, t := range f.Treatments {
		if t.Path == "" {
			return fieldErr(fmt.Sprintf("treatments[%d].path", i), "required")
		}
	}
	if f.Trials == 0 {
		f.Trials = 1
	}
	for i, id := range f.Required {
		if err := events.ValidateToken("instrument", id); err != nil {
			return tokenErr(fmt.Sprintf("required[%d]", i), err)
		}
	}
	if f.ValidOutcomes != nil && len(f.ValidOutcomes) == 0 {
		// Written out empty, it counts no attempt; the default is for a
		// suite that says nothing, as trials: 0 is not a silent 1.
		return fieldErr("valid_outcomes", "an empty list counts no attempt; leave valid_outcomes out for the default %v", DefaultValidOutcomes)
	}
	if len(f.ValidOutcomes) == 0 {
		f.ValidOutcomes = slices.Clone(DefaultValidOutcomes)
	}
	for i, s := range f.ValidOutcomes {
		if !slices.Contains(allStatuses, s) {
			return fieldErr(fmt.Sprintf("valid_outcomes[%d]", i), "unknown run status %q (want one of %v)", s, allStatuses)
		}
	}
	if f.Stopping != nil {
		if err := f.Stopping.normalise("stopping"); err != nil {
			return err
		}
	}
	return nil
}

// causedError is a suite's Error that keeps the typed error behind it,
// so that errors.As finds either (a cases.PromptError names the treatment,
// the case and the missing key).
type causedError struct {
	err   *Error
	cause error
}

func (e *causedError) Error() string { return e.err.Error() }

// Unwrap returns the suite's Error and its cause.
func (e *causedError) Unwrap() []error { return []error{e.err, e.cause} }

// Suite is a loaded suite: the file, and the cases of its split and the
// treatments it names, each loaded and checked.
type Suite struct {
	// Path is the suite file.
	Path string
	File File
	// Cases are the roster, in file order.
	Cases []*cases.Case
	// Treatments are the treatments, in file order.
	Treatments []*cases.Treatment
	// Skipped names the cases left out because they belong to another
	// split.
	Skipped []string
	// Dataset pins the data file cases were made from, if any.
	Dataset *DatasetRef
}

// Load reads a suite file, then the case and treatment files it names
// (relative to it), and checks them together: unique IDs, every required
// instrument declared as required by every case, a script for every case in
// a scripted treatment, and no judge that is an actor's own model.
func Load(path string) (_ *Suite, err error) {
	data, err := cases.ReadInput(path, MaxFileBytes, "a suite file")
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	defer func() { locate(err, path, data) }()
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	s := &Suite{Path: path, File: *f}
	errAt := func(field, format string, args ...any) error {
		return &Error{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
	// Every input resolves inside the suite's directory (or one its file
	// allows): the submitter uploads what it reads for every role to read.
	roots, err := newInputRoots(path, f)
	if err != nil {
		return nil, err
	}
	caseAt := map[string]int{}
	for i, e := range f.Cases {
		field := fmt.Sprintf("cases[%d]", i)
		c, err := cases.LoadCaseWithin(rel(e.Path), roots.confine)
		if err != nil {
			return nil, errAt(field, "%v", err)
		}
		if j, dup := caseAt[c.ID]; dup {
			return nil, errAt(field, "case id %q is also cases[%d]", c.ID, j)
		}
		caseAt[c.ID] = i
		if split := e.Split; split != "" && split != f.Split {
			s.Skipped = append(s.Skipped, c.ID)
			continue
		}
		for _, id := range f.Required {
			in, ok := c.Grading.Instrument(id)
			if !ok || !in.IsRequired() {
				return nil, errAt(field, "case %s must declare the suite's required instrument %q as required (grading.instruments)", c.ID, id)
			}
		}
		s.Cases = append(s.Cases, c)
	}
	if d := f.Dataset; d != nil {
		made, ref, err := datasetCases(d, filepath.Dir(path), f.Split, roots.confine)
		if err != nil {
			var de *DataError
			var ce *cases.Error
			if errors.As(err, &de) || errors.As(err, &ce) {
				return nil, errAt("dataset", "%v", err)
			}
			// The error names its field of the dataset block already.
			return nil, &Error{File: path, Msg: err.Error()}
		}
		for _, c := range made {
			if j, dup := caseAt[c.ID]; dup {
				return nil, errAt("dataset", "case id %q of %s is also cases[%d]", c.ID, d.Path, j)
			}
			for _, id := range f.Required {
				in, ok := c.Grading.Instrument(id)
				if !ok || !in.IsRequired() {
					return nil, errAt("dataset", "case %s (from %s) must declare the suite's required instrument %q as required (grading.instruments)", c.ID, d.Path, id)
				}
			}
		}
		s.Cases = append(s.Cases, made...)
		s.Dataset = &ref
	}
	if len(s.Cases) == 0 {
		if d := f.Dataset; d != nil && d.SplitField != "" && s.Dataset != nil {
			return nil, errAt("dataset", "none of the %d records of %s has %s %q, the suite's split", s.Dataset.Records, d.Path, d.SplitField, f.Split)
		}
		return nil, errAt("cases", "no case is in split %q", f.Split)
	}
	if err := checkScorerScales(s.Cases); err != nil {
		return nil, errAt("cases", "%v", err)
	}
	if runs := uint64(len(s.Cases)) * uint64(len(f.Treatments)) * uint64(f.Trials); runs > MaxRuns {
		return nil, errAt("trials", "%d cases × %d treatments × %d trials = %d runs; a suite has at most %d",
			len(s.Cases), len(f.Treatments), f.Trials, runs, MaxRuns)
	}
	treatAt := map[string]int{}
	for i, e := range f.Treatments {
		field := fmt.Sprintf("treatments[%d]", i)
		t, err := cases.LoadTreatmentWithin(rel(e.Path), roots.confine)
		if err != nil {
			return nil, errAt(field, "%v", err)
		}
		if j, dup := treatAt[t.ID]; dup {
			return nil, errAt(field, "treatment id %q is also treatments[%d]", t.ID, j)
		}
		treatAt[t.ID] = i
		for _, c := range s.Cases {
			if t.Model.Provider == cases.ProviderScripted && t.Model.ScriptFiles[c.ID] == "" {
				return nil, errAt(field, "scripted treatment %s has no script for case %s", t.ID, c.ID)
			}
			// A prompt that cannot be rendered for a case, or tools that
			// leave a case none, stop the suite here, before anything is
			// submitted, and keep their type for errors.As.
			if err := cases.CheckScaffold(c, t); err != nil {
				var ce *cases.Error
				if errors.As(err, &ce) && ce.File == "" {
					ce.File = e.Path
				} else {
					err = fmt.Errorf("%s: %w", e.Path, err)
				}
				return nil, &causedError{&Error{File: path, Field: field, Msg: err.Error()}, err}
			}
			if c.Grading == nil {
				continue
			}
			for _, in := range c.Grading.Instruments {
				if in.Kind == cases.InstrumentJudge && in.Model != nil && cases.SameModel(*in.Model, t.Model) {
					return nil, errAt(fmt.Sprintf("cases[%d]", caseAt[c.ID]),
						"the judge %q of case %s is the model of treatment %s: a judge is never the actor's own model", in.ID, c.ID, t.ID)
				}
			}
		}
		s.Treatments = append(s.Treatments, t)
	}
	if f.Stopping != nil {
		if err := f.Stopping.checkTreatments(treatAt); err != nil {
			return nil, errAt("stopping.comparison", "%v", err)
		}
		if err := f.Stopping.checkScorer(s.Cases); err != nil {
			return nil, errAt("stopping.scorer", "%v", err)
		}
	}
	return s, nil
}

// checkScorerScales refuses a scorer ID that two of the suite's cases
// declare on different scales or directions. The report takes a scorer ID
// for one measurement: it maps every value onto [0, 1] by one scale, pools
// them over cases into one mean, interval and paired test, and maps the
// mean back onto that scale for --fail-under. Values from two scales would
// be pooled as if they were one, under the first case's scale.
func checkScorerScales(cs []*cases.Case) error {
	type first struct {
		caseID string
		sc     cases.Scorer
	}
	seen := map[string]first{}
	for _, c := range cs {
		if c.Grading == nil {
			continue
		}
		for _, sc := range c.Grading.Scorers {
			f, ok := seen[sc.ID]
			if !ok {
				seen[sc.ID] = first{c.ID, sc}
				continue
			}
			if f.sc.Min() != sc.Min() || f.sc.Max() != sc.Max() || f.sc.Higher() != sc.Higher() {
				return fmt.Errorf("scorer %q is %s in case %s but %s in case %s: one scorer ID is one measurement, which the report pools over cases on one scale; give one of them another ID",
					sc.ID, scaleText(f.sc), f.caseID, scaleText(sc), c.ID)
			}
		}
	}
	return nil
}

// scaleText names a scorer's scale and direction for an error.
func scaleText(sc cases.Scorer) string {
	dir := "higher is better"
	if !sc.Higher() {
		dir = "lower is better"
	}
	return fmt.Sprintf("[%s, %s] (%s)", strconv.FormatFloat(sc.Min(), 'g', -1, 64), strconv.FormatFloat(sc.Max(), 'g', -1, 64), dir)
}
