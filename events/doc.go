// Package events is factline's vocabulary: the fact envelope, one typed body
// per fact kind, the closed unions those bodies carry, the msgpack wire codec
// and the subject grammar.
//
// The package imports no NATS code. Everything that reads or writes the log
// (services, projections, analysts' tools) shares these types, so a fact is
// checked once, where it is made (NewFact) or where it enters from the wire
// (Decode); readers then trust it.
//
// The wire form is language-neutral on purpose: a fact is a msgpack map with
// snake_case keys, unions carry a string "type" discriminator, and times use
// the msgpack timestamp extension. docs/facts.md is the field table.
package events
