package measure

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// referenceRoster is the roster as first written: every member in one
// slice, then a count of every run ID. Members must give the same members
// in the same order without holding them.
func referenceRoster(s events.SuiteSubmitted) []Member {
	var out []Member
	for trial := uint32(1); trial <= s.Trials; trial++ {
		for _, c := range s.Cases {
			for _, t := range s.Treatments {
				out = append(out, Member{Case: c.ID, Treatment: t.ID, Trial: trial, Run: referenceBaseRunID(c.ID, t.ID, trial)})
			}
		}
	}
	seen := map[string]int{}
	for _, m := range out {
		seen[m.Run]++
	}
	for i, m := range out {
		if seen[m.Run] > 1 || len(m.Run) > maxRunID {
			sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", m.Case, m.Treatment, m.Trial)))
			out[i].Run = m.Run[:min(len(m.Run), maxRunID-9)] + "-" + hex.EncodeToString(sum[:4])
		}
	}
	return out
}

func referenceBaseRunID(caseID, treatment string, trial uint32) string {
	id := fmt.Sprintf("%s-%s-t%d", caseID, treatment, trial)
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
	if strings.HasPrefix(id, "_") {
		id = "r" + id
	}
	return id
}

// Members streams exactly the roster: same members, same order, same run
// IDs, for IDs built to collide ("a-b"+"c" and "a"+"b-c", "x-t1"+"y" and
// "x"+"t1-y"), to start with '_' and to pass 128 bytes.
func TestMembersAreTheRoster(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	parts := []string{"a", "b", "c", "t1", "t12", "_", "x", "é", strings.Repeat("l", 60)}
	id := func() string {
		var b strings.Builder
		for i := range 1 + rng.IntN(3) {
			if i > 0 {
				b.WriteByte('-')
			}
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return b.String()
	}
	uniq := func(n int) []string {
		seen := map[string]bool{}
		var out []string
		for len(out) < n {
			if s := id(); !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return out
	}
	for round := range 300 {
		s := submitted(uniq(1+rng.IntN(8)), uniq(1+rng.IntN(4)), uint32(1+rng.IntN(13)))
		want := referenceRoster(s)
		var got []Member
		for m := range Members(s) {
			got = append(got, m)
		}
		if len(got) != len(want) || Size(s) != uint64(len(want)) {
			t.Fatalf("round %d: %d members, Size %d, want %d", round, len(got), Size(s), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d, member %d: %+v, want %+v", round, i, got[i], want[i])
			}
		}
		if r := Roster(s); len(r) != len(want) || (len(r) > 0 && r[len(r)-1] != want[len(want)-1]) {
			t.Fatalf("round %d: Roster differs from Members", round)
		}
	}
}

// Walking a large roster holds no roster: the live heap half way through
// is what it was before, not one entry per planned run.
func TestMembersHoldNoRoster(t *testing.T) {
	const trials = 100_000
	s := submitted([]string{"fix-add", "fix-mul"}, []string{"base"}, trials)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	var during uint64
	n := 0
	for m := range Members(s) {
		if n++; n == trials {
			during = heap()
		}
		_ = m
	}
	if n != 2*trials {
		t.Fatalf("%d members", n)
	}
	// The roster of 200000 members held at once is ~15 MB; streaming
	// holds a few entries.
	if grew := int64(during) - int64(before); grew > 1<<20 {
		t.Fatalf("the live heap grew by %d bytes while walking the roster: it is being held", grew)
	}
}

// BenchmarkRosterHeld reports the live heap a roster of 100000 runs (the
// suites.MaxRuns bound: 10 cases × 1 treatment × 10000 trials) costs while
// it is walked: held as a slice (Roster, what the report needs) against
// streamed (Members, what the meter and the submitter use).
//
//	go test -run '^$' -bench BenchmarkRosterHeld ./services/meter/measure/
func BenchmarkRosterHeld(b *testing.B) {
	s := submitted([]string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}, []string{"base"}, 10_000)
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	for _, c := range []struct {
		name string
		walk func(func(Member))
	}{
		{"slice", func(f func(Member)) {
			for _, m := range Roster(s) {
				f(m)
			}
		}},
		{"streamed", func(f func(Member)) {
			for m := range Members(s) {
				f(m)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var held int64
			for range b.N {
				before, n := heap(), 0
				c.walk(func(Member) {
					if n++; n == 50_000 {
						held = max(held, heap()-before)
					}
				})
			}
			b.ReportMetric(float64(held)/(1<<20), "held-MiB")
		})
	}
}
