package events

import (
	"maps"
	"slices"
)

// UnionVariants lists, for each closed union, the variant names its decoder
// admits. Tests use it to check that generators and golden files cover every
// variant, so that adding a variant without test data fails.
var UnionVariants = map[string][]string{
	"ActorIntent":   intentSpec{}.names(),
	"Verification":  verificationSpec{}.names(),
	"StopResult":    stopSpec{}.names(),
	"StallAction":   stallSpec{}.names(),
	"VerdictResult": verdictSpec{}.names(),
}

// UnionTables lists, for each closed union, the keys of its decoding table,
// sorted. They must be the same set as UnionVariants.
var UnionTables = map[string][]string{
	"ActorIntent":   slices.Sorted(maps.Keys(intentVariants)),
	"Verification":  slices.Sorted(maps.Keys(verificationVariants)),
	"StopResult":    slices.Sorted(maps.Keys(stopVariants)),
	"StallAction":   slices.Sorted(maps.Keys(stallVariants)),
	"VerdictResult": slices.Sorted(maps.Keys(verdictVariants)),
}

// EncodeV2 writes f in envelope version 2, as writers did before version
// 3: the version 2 golden files pin that these are still its bytes.
func EncodeV2(f Fact) ([]byte, error) { return marshal(envelope2{&f, EnvelopeV2}) }

// BodyKeys is envelope version 3's table of body keys, indexed by number.
var BodyKeys = bodyKeys[:]
