//go:build !race

package events_test

// raceEnabled says the race detector is on (race_test.go).
const raceEnabled = false
