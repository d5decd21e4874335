package events

// GradeInstrument (grade.instrument) is one instrument's result on one
// sealed snapshot.
type GradeInstrument struct {
	SnapshotDigest Digest           `msgpack:"snapshot_digest"`
	Result         InstrumentResult `msgpack:"result"`
	// Containment is how the grader contained the instrument's command, as
	// its host allowed: set for a command that ran, absent for instruments
	// that run no code of the candidate and in facts of older graders.
	Containment *Containment `msgpack:"containment,omitempty"`
	// Judge is the judging model's call of a judge instrument that asked
	// one (absent for other instruments, and in older facts).
	Judge *JudgeCall `msgpack:"judge,omitempty"`
}

// Kind implements Body.
func (GradeInstrument) Kind() Kind { return KindGradeInstrument }

func (b GradeInstrument) validate(p string) error {
	if err := needDigest(p, "snapshot_digest", b.SnapshotDigest); err != nil {
		return err
	}
	if err := b.Result.validate(join(p, "result")); err != nil {
		return err
	}
	if b.Judge != nil {
		if err := b.Judge.validate(join(p, "judge")); err != nil {
			return err
		}
	}
	if b.Containment != nil {
		return b.Containment.validate(join(p, "containment"))
	}
	return nil
}

// GradeVerdict (grade.verdict) is one revision of the grade of a snapshot.
type GradeVerdict struct {
	Verdict GraderVerdict `msgpack:"verdict"`
}

// Kind implements Body.
func (GradeVerdict) Kind() Kind { return KindGradeVerdict }

func (b GradeVerdict) validate(p string) error { return b.Verdict.validate(join(p, "verdict")) }

// GradeConflict (grade.conflict) flags that a later check disagrees with an
// earlier revision. It changes no earlier grade.
type GradeConflict struct {
	SnapshotDigest Digest       `msgpack:"snapshot_digest"`
	Revision       uint32       `msgpack:"revision"`       // the revision that disagrees
	ConflictsWith  uint32       `msgpack:"conflicts_with"` // the earlier revision
	Instrument     InstrumentID `msgpack:"instrument"`
	Reason         string       `msgpack:"reason"`
}

// Kind implements Body.
func (GradeConflict) Kind() Kind { return KindGradeConflict }

func (b GradeConflict) validate(p string) error {
	if err := needDigest(p, "snapshot_digest", b.SnapshotDigest); err != nil {
		return err
	}
	if err := needPositive(p, "revision", b.Revision); err != nil {
		return err
	}
	if err := needPositive(p, "conflicts_with", b.ConflictsWith); err != nil {
		return err
	}
	if b.ConflictsWith >= b.Revision {
		return invalid(join(p, "conflicts_with"), "must name an earlier revision than %d", b.Revision)
	}
	if err := needString(p, "instrument", b.Instrument); err != nil {
		return err
	}
	return needString(p, "reason", b.Reason)
}
