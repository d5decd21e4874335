package cases

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/models/scripted"
)

// Grading is a case's grading section: the instruments a grader runs on the
// sealed candidate of every attempt, and the policy that turns their results
// into a verdict (docs/grading.md).
type Grading struct {
	Instruments []Instrument `yaml:"instruments" json:"instruments"`
	// AllowMissingAdvisory lets a grade stand when an advisory instrument
	// produced no result. A missing advisory result never counts as
	// agreement either way.
	AllowMissingAdvisory bool `yaml:"allow_missing_advisory,omitempty" json:"allow_missing_advisory,omitempty"`
	// Scorers are the numbers read from the instruments' results beside
	// the verdict (docs/grading.md#scores); at most one decides its
	// instrument's outcome.
	Scorers []Scorer `yaml:"scorers,omitempty" json:"scorers,omitempty"`
}

// Instrument kinds.
const (
	InstrumentCommand = "command"
	InstrumentFile    = "file"
	InstrumentScope   = "scope"
	InstrumentJudge   = "judge"
)

// What a command instrument does when the candidate changed one of the files
// its tests_from_fixture globs protect.
const (
	// TestEditRestore copies the fixture's files over the candidate's and
	// removes protected files the fixture does not have, then runs.
	TestEditRestore = "restore"
	// TestEditRefuse does not run: the instrument fails, naming the files.
	TestEditRefuse = "refuse"
)

// Default instrument settings.
const (
	DefaultInstrumentVersion = "1"
	DefaultCommandTimeout    = 5 * time.Minute
	DefaultJudgeTimeout      = 2 * time.Minute
)

// Instrument is one grading instrument. Common fields come first; the rest
// belong to one kind each.
type Instrument struct {
	ID   string `yaml:"id" json:"id"`
	Kind string `yaml:"kind" json:"kind"`
	// Version names the instrument's behaviour; a re-grade under a new
	// version appends a new revision of the grade. Default "1".
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// Required instruments must pass for a passing grade, and leave the
	// grade pending while they have no result. Default true, except for
	// judge (advisory by default).
	Required *bool `yaml:"required,omitempty" json:"required,omitempty"`
	// Binding says whether this instrument's failure vetoes a passing grade.
	// Default: the value of Required.
	Binding *bool `yaml:"binding,omitempty" json:"binding,omitempty"`
	// Requirement is the requirement a veto of this instrument names
	// (default: the instrument's ID).
	Requirement string `yaml:"requirement,omitempty" json:"requirement,omitempty"`
	// Timeout bounds a command or a judge (default 5m and 2m).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`

	// Command (kind command) runs with bash in the restored candidate.
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	// ExpectExit is the exit code that passes (default 0).
	ExpectExit int `yaml:"expect_exit,omitempty" json:"expect_exit,omitempty"`
	// TestsFromFixture are globs of files (tests) taken from the fixture,
	// never from the candidate.
	TestsFromFixture []string `yaml:"tests_from_fixture,omitempty" json:"tests_from_fixture,omitempty"`
	// OnTestEdit is restore (default) or refuse.
	OnTestEdit string `yaml:"on_test_edit,omitempty" json:"on_test_edit,omitempty"`
	// Score (kind command) says where the command's score is read from.
	Score *CommandScore `yaml:"score,omitempty" json:"score,omitempty"`

	// Path (kind file) is the file checked, relative to the workspace root.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Exists passes when the file exists (true) or does not (false).
	Exists *bool `yaml:"exists,omitempty" json:"exists,omitempty"`
	// Contains passes when the file contains this text.
	Contains string `yaml:"contains,omitempty" json:"contains,omitempty"`
	// Matches passes when the file matches this regular expression (RE2).
	Matches string `yaml:"matches,omitempty" json:"matches,omitempty"`
	// JSONPath selects a value in a JSON file ($.a.b[0]) that must equal
	// Equals.
	JSONPath string `yaml:"json_path,omitempty" json:"json_path,omitempty"`
	// Equals is the value JSONPath must select (compared as JSON values).
	Equals any `yaml:"equals,omitempty" json:"equals,omitempty"`

	// Allow (kind scope) are the globs the paths changed relative to the
	// fixture must stay within.
	Allow []string `yaml:"allow,omitempty" json:"allow,omitempty"`

	// Model (kind judge) is the reviewing model; never the actor's own.
	Model *ModelSpec `yaml:"model,omitempty" json:"model,omitempty"`
	// Script is a scripted judge's script (docs/scripted-model.md).
	Script string `yaml:"script,omitempty" json:"script,omitempty"`
	// Rubric is what the judge checks; it answers with a line
	// "VERDICT: PASS" or "VERDICT: FAIL".
	Rubric string `yaml:"rubric,omitempty" json:"rubric,omitempty"`
	// Files are workspace files shown to the judge.
	Files []string `yaml:"files,omitempty" json:"files,omitempty"`
	// Scale (kind judge) is [min, max] of the rating the judge gives on a
	// line "SCORE: n" beside its verdict.
	Scale []float64 `yaml:"scale,omitempty" json:"scale,omitempty"`
}

// IsRequired reports whether the instrument is required.
func (in Instrument) IsRequired() bool {
	if in.Required != nil {
		return *in.Required
	}
	return in.Kind != InstrumentJudge
}

// IsBinding reports whether the instrument's failure vetoes a pass.
func (in Instrument) IsBinding() bool {
	if in.Binding != nil {
		return *in.Binding
	}
	return in.IsRequired()
}

// RequirementID returns the requirement a veto of this instrument names.
func (in Instrument) RequirementID() string {
	if in.Requirement != "" {
		return in.Requirement
	}
	return in.ID
}

// Instrument returns the instrument with the given ID.
func (g *Grading) Instrument(id string) (Instrument, bool) {
	if g == nil {
		return Instrument{}, false
	}
	for _, in := range g.Instruments {
		if in.ID == id {
			return in, true
		}
	}
	return Instrument{}, false
}

// instrumentVersion is what a version may hold: it becomes part of message
// IDs and must stay short and unambiguous.
var instrumentVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

// normalise checks the grading section of case c and fills in defaults.
// A nil c is a grading section on its own (a regrade's file), whose
// requirements belong to cases it does not know.
func (g *Grading) normalise(field string, c *Case) error {
	if g == nil {
		return nil
	}
	var reqs map[string]bool
	if c != nil {
		reqs = map[string]bool{}
		for _, r := range c.Requirements {
			reqs[r.ID] = true
		}
	}
	seen := map[string]bool{}
	for i := range g.Instruments {
		in := &g.Instruments[i]
		f := fmt.Sprintf("%s.instruments[%d]", field, i)
		if err := events.ValidateToken("id", in.ID); err != nil {
			return tokenErr(f+".id", err)
		}
		if seen[in.ID] {
			return fieldErr(f+".id", "duplicate instrument id %q", in.ID)
		}
		seen[in.ID] = true
		if in.Version == "" {
			in.Version = DefaultInstrumentVersion
		}
		if !instrumentVersion.MatchString(in.Version) {
			return fieldErr(f+".version", "%q: use 1 to 32 of letters, digits, '.', '-', '_'", in.Version)
		}
		if in.Requirement != "" && reqs != nil && !reqs[in.Requirement] {
			return fieldErr(f+".requirement", "no requirement with id %q", in.Requirement)
		}
		var err error
		switch in.Kind {
		case InstrumentCommand:
			err = in.checkCommand(f)
		case InstrumentFile:
			err = in.checkFile(f)
		case InstrumentScope:
			err = in.checkScope(f)
		case InstrumentJudge:
			err = in.checkJudge(f)
		case "":
			err = fieldErr(f+".kind", "required (%s, %s, %s or %s)", InstrumentCommand, InstrumentFile, InstrumentScope, InstrumentJudge)
		default:
			err = fieldErr(f+".kind", "unknown kind %q (want %s, %s, %s or %s)", in.Kind, InstrumentCommand, InstrumentFile, InstrumentScope, InstrumentJudge)
		}
		if err != nil {
			return err
		}
	}
	if c == nil {
		// A regrade's scorers may read instruments the file leaves to the
		// case: they are checked once merged into it.
		return nil
	}
	return g.checkScorers(field)
}

// only returns an error naming the first field set that does not belong to
// the instrument's kind.
func (in *Instrument) only(f string, allowed ...string) error {
	set := map[string]bool{
		"command": in.Command != "", "expect_exit": in.ExpectExit != 0, "tests_from_fixture": len(in.TestsFromFixture) > 0,
		"on_test_edit": in.OnTestEdit != "", "path": in.Path != "", "exists": in.Exists != nil, "contains": in.Contains != "",
		"matches": in.Matches != "", "json_path": in.JSONPath != "", "equals": in.Equals != nil, "allow": len(in.Allow) > 0,
		"model": in.Model != nil, "script": in.Script != "", "rubric": in.Rubric != "", "files": len(in.Files) > 0,
		"timeout": in.Timeout != 0, "score": in.Score != nil, "scale": in.Scale != nil,
	}
	for _, a := range allowed {
		delete(set, a)
	}
	for _, name := range []string{"command", "expect_exit", "tests_from_fixture", "on_test_edit", "path", "exists", "contains",
		"matches", "json_path", "equals", "allow", "model", "script", "rubric", "files", "timeout", "score", "scale"} {
		if set[name] {
			return fieldErr(f+"."+name, "does not apply to a %s instrument", in.Kind)
		}
	}
	return nil
}

func (in *Instrument) checkCommand(f string) error {
	if err := in.only(f, "command", "expect_exit", "tests_from_fixture", "on_test_edit", "timeout", "score"); err != nil {
		return err
	}
	if in.Score != nil {
		if err := in.Score.check(f + ".score"); err != nil {
			return err
		}
	}
	if in.Command == "" {
		return fieldErr(f+".command", "required")
	}
	if in.ExpectExit < 0 || in.ExpectExit > 255 {
		return fieldErr(f+".expect_exit", "%d is not an exit code (0-255)", in.ExpectExit)
	}
	if in.Timeout == 0 {
		in.Timeout = Duration(DefaultCommandTimeout)
	}
	if err := CheckGlobs(f+".tests_from_fixture", in.TestsFromFixture); err != nil {
		return err
	}
	switch in.OnTestEdit {
	case "":
		if len(in.TestsFromFixture) > 0 {
			in.OnTestEdit = TestEditRestore
		}
	case TestEditRestore, TestEditRefuse:
		if len(in.TestsFromFixture) == 0 {
			return fieldErr(f+".on_test_edit", "needs tests_from_fixture: the globs of the files it protects")
		}
	default:
		return fieldErr(f+".on_test_edit", "unknown mode %q (want %s or %s)", in.OnTestEdit, TestEditRestore, TestEditRefuse)
	}
	return nil
}

func (in *Instrument) checkFile(f string) error {
	if err := in.only(f, "path", "exists", "contains", "matches", "json_path", "equals"); err != nil {
		return err
	}
	if in.Path == "" {
		return fieldErr(f+".path", "required")
	}
	if err := checkRelPath(in.Path); err != nil {
		return fieldErr(f+".path", "%v", err)
	}
	n := 0
	for _, set := range []bool{in.Exists != nil, in.Contains != "", in.Matches != "", in.JSONPath != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fieldErr(f, "a file instrument needs exactly one of exists, contains, matches or json_path (has %d)", n)
	}
	if in.Matches != "" {
		if _, err := regexp.Compile(in.Matches); err != nil {
			return fieldErr(f+".matches", "%v", err)
		}
	}
	if in.Equals != nil && in.JSONPath == "" {
		return fieldErr(f+".equals", "needs json_path")
	}
	if in.JSONPath != "" {
		if _, err := ParseJSONPath(in.JSONPath); err != nil {
			return fieldErr(f+".json_path", "%v", err)
		}
	}
	return nil
}

func (in *Instrument) checkScope(f string) error {
	if err := in.only(f, "allow"); err != nil {
		return err
	}
	if len(in.Allow) == 0 {
		return fieldErr(f+".allow", "required: the globs changed paths must stay within")
	}
	return CheckGlobs(f+".allow", in.Allow)
}

func (in *Instrument) checkJudge(f string) error {
	if err := in.only(f, "model", "script", "rubric", "files", "timeout", "scale"); err != nil {
		return err
	}
	if in.Scale != nil {
		if err := checkScale(f+".scale", in.Scale); err != nil {
			return err
		}
	}
	if in.Model == nil {
		return fieldErr(f+".model", "required: the reviewing model")
	}
	m := in.Model
	if m.Scripts != "" || len(m.ScriptFiles) > 0 {
		return fieldErr(f+".model.scripts", "a judge takes its script inline in script")
	}
	if m.Provider == "" || !slices.Contains(Providers, m.Provider) {
		if err := m.checkProvider(f + ".model"); err != nil {
			return err
		}
	}
	switch {
	case m.Provider == ProviderScripted && in.Script == "":
		return fieldErr(f+".script", "a scripted judge needs its script")
	case m.Provider != ProviderScripted && in.Script != "":
		return fieldErr(f+".script", "only a scripted judge has a script")
	}
	if m.Name == "" {
		return fieldErr(f+".model.name", "required: a judge is named so that it is never taken for the actor")
	}
	if err := m.checkSettings(f + ".model"); err != nil {
		return err
	}
	if err := m.checkProvider(f + ".model"); err != nil {
		return err
	}
	if in.Rubric == "" {
		return fieldErr(f+".rubric", "required: what the judge checks")
	}
	for i, p := range in.Files {
		if err := checkRelPath(p); err != nil {
			return fieldErr(fmt.Sprintf("%s.files[%d]", f, i), "%v", err)
		}
	}
	if in.Timeout == 0 {
		in.Timeout = Duration(DefaultJudgeTimeout)
	}
	if m.Provider == ProviderScripted {
		// Checked with the case, like every input, rather than when a
		// grader first runs the judge.
		if _, err := scripted.Parse("script", []byte(in.Script)); err != nil {
			return fieldErr(f+".script", "%v", err)
		}
	}
	return nil
}

// SameModel reports whether two model specs name the same model: the same
// provider, model name and endpoint. A judge must never be the actor's own
// model.
func SameModel(a, b ModelSpec) bool {
	return a.Provider == b.Provider && a.Name == b.Name && a.BaseURL == b.BaseURL
}

// checkRelPath refuses a path that is absolute or climbs out of the root.
func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q must be a relative path inside the workspace", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return fmt.Errorf("%q must not climb out of the workspace", p)
		}
	}
	return nil
}

// CheckGlobs checks path globs as MatchGlob reads them; field names them in
// errors.
func CheckGlobs(field string, globs []string) error {
	for i, g := range globs {
		f := fmt.Sprintf("%s[%d]", field, i)
		if g == "" || strings.HasPrefix(g, "/") || strings.HasSuffix(g, "/") {
			return fieldErr(f, "%q: a glob is non-empty and neither starts nor ends with /", g)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fieldErr(f, "%q: %v", g, err)
		}
	}
	return nil
}

// MatchGlob reports whether the workspace path p (relative, /-separated) is
// covered by the glob g, in the syntax of the workspace's ignore rules: a
// glob without '/' matches any single path element (check.sh, *.py,
// tests), a glob with '/' matches the path from the root (tests/*.sh); in
// both cases a matched directory covers everything below it.
func MatchGlob(g, p string) bool {
	els := strings.Split(p, "/")
	if !strings.Contains(g, "/") {
		for _, el := range els {
			if ok, _ := path.Match(g, el); ok {
				return true
			}
		}
		return false
	}
	for i := range els {
		if ok, _ := path.Match(g, strings.Join(els[:i+1], "/")); ok {
			return true
		}
	}
	return false
}

// MatchAny reports whether any of globs covers p.
func MatchAny(globs []string, p string) bool {
	for _, g := range globs {
		if MatchGlob(g, p) {
			return true
		}
	}
	return false
}

// JSONStep is one step of a JSON path: an object key or an array index.
type JSONStep struct {
	Key   string
	Index int // used when IsIndex
	// IsIndex marks an array index step.
	IsIndex bool
}

// ParseJSONPath parses a JSON path of the form $.a.b[0]["odd key"].c (the
// leading $ and the first dot are optional): object keys by name, array
// elements by index.
func ParseJSONPath(s string) ([]JSONStep, error) {
	rest := strings.TrimPrefix(s, "$")
	var steps []JSONStep
	first := true
	for rest != "" {
		switch {
		case rest[0] == '.':
			rest = rest[1:]
			fallthrough
		case first && rest[0] != '[':
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, fmt.Errorf("%q: empty key", s)
			}
			steps = append(steps, JSONStep{Key: rest[:end]})
			rest = rest[end:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("%q: unclosed [", s)
			}
			inner := rest[1:end]
			if strings.HasPrefix(inner, `"`) {
				k, err := strconv.Unquote(inner)
				if err != nil {
					return nil, fmt.Errorf("%q: bad quoted key %s", s, inner)
				}
				steps = append(steps, JSONStep{Key: k})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("%q: [%s] is neither an index nor a quoted key", s, inner)
				}
				steps = append(steps, JSONStep{Index: n, IsIndex: true})
			}
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("%q: unexpected %q", s, rest[:1])
		}
		first = false
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%q selects nothing", s)
	}
	return steps, nil
}

// ParseGrading parses a grading section written on its own (instruments:
// and scorers:, as factline regrade reads one) and checks its instruments as a case's
// would be checked, but for requirement names, which belong to the cases
// it is applied to (its scorers are checked once merged into them); name is used in errors, which name the line and the
// field as the file writes it (instruments[1].kind).
func ParseGrading(name string, data []byte) (*Grading, error) {
	var g Grading
	if err := DecodeYAML(name, data, &g); err != nil {
		return nil, err
	}
	if err := g.normalise("grading", nil); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = name
			ce.Field = strings.TrimPrefix(strings.TrimPrefix(ce.Field, "grading"), ".")
			if ce.Line == 0 {
				ce.Line = fieldLine(data, ce.Field)
			}
		}
		return nil, err
	}
	return &g, nil
}
