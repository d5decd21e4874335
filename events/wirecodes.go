package events

// Envelope version 2 names a fact's kind and its producer's role by small
// integers instead of strings. The numbers are part of the wire format
// (docs/facts.md lists them): a number is never reused or renumbered, and a
// new kind or role takes the next free one.
var kindCodes = map[Kind]uint8{
	KindSuiteSubmitted:    1,
	KindRunRequested:      2,
	KindRunClaimed:        3,
	KindTurnStarted:       4,
	KindModelReplied:      5,
	KindDispatchIntended:  6,
	KindDispatchComplete:  7,
	KindTurnCompleted:     8,
	KindStallObserved:     9,
	KindStopDecided:       10,
	KindControlAccepted:   11,
	KindTaskGeneration:    12,
	KindRunEnded:          13,
	KindCandidateSealed:   14,
	KindGradeInstrument:   15,
	KindGradeVerdict:      16,
	KindGradeConflict:     17,
	KindSuiteReported:     18,
	KindSuiteStopped:      19,
	KindSuiteControlled:   20,
	KindContextSummarised: 21,
	KindRunDelegated:      22,
}

// ownerCodes are the producer roles' numbers in envelope version 2.
var ownerCodes = map[Owner]uint8{
	OwnerSubmitter: 1,
	OwnerRunner:    2,
	OwnerStaller:   3,
	OwnerDecider:   4,
	OwnerGrader:    5,
	OwnerMeter:     6,
}

// kindByCode and ownerByCode invert the tables above, indexed by number.
var (
	kindByCode  = invert(kindCodes)
	ownerByCode = invert(ownerCodes)
)

func invert[K ~string](m map[K]uint8) []K {
	var top uint8
	for _, c := range m {
		top = max(top, c)
	}
	out := make([]K, int(top)+1)
	for k, c := range m {
		if out[c] != "" {
			panic("events: wire code " + string(k) + " reused")
		}
		out[c] = k
	}
	return out
}

// KindCode returns the number envelope version 2 writes for k (0 for a kind
// this version does not know).
func (k Kind) KindCode() uint8 { return kindCodes[k] }

// OwnerCode returns the number envelope version 2 writes for the role o (0
// for an unknown role).
func (o Owner) OwnerCode() uint8 { return ownerCodes[o] }
