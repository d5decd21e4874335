//go:build race

package events_test

// raceEnabled says the race detector is on: it makes sync.Pool drop a
// share of what is put back, so pooled buffers count as allocations more
// often.
const raceEnabled = true
