package stats

import (
	"fmt"
	"math"
)

// Wilson returns the Wilson score interval (Wilson 1927, without continuity
// correction) for successes out of n trials at the normal quantile z (Z95
// for 95%). Unlike the Wald interval it stays inside [0, 1] and does not
// collapse to a point at 0 or n successes: 0 of n gives [0, hi], n of n
// gives [lo, 1], exactly.
//
//	centre = (p + z²/2n) / (1 + z²/n)
//	half   = z / (1 + z²/n) · √(p(1−p)/n + z²/4n²)
func Wilson(successes, n int, z float64) (Interval, error) {
	if n <= 0 || successes < 0 || successes > n || !(z > 0) {
		return Interval{}, fmt.Errorf("%w: wilson(%d of %d, z=%v)", ErrInput, successes, n, z)
	}
	nf := float64(n)
	p := float64(successes) / nf
	z2 := z * z
	d := 1 + z2/nf
	centre := (p + z2/(2*nf)) / d
	half := z / d * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	iv := Interval{Lo: centre - half, Hi: centre + half}
	// The bounds are exact at the ends; rounding must not put them a hair
	// outside [0, 1] or off the point they touch.
	if successes == 0 {
		iv.Lo = 0
	}
	if successes == n {
		iv.Hi = 1
	}
	iv.Lo, iv.Hi = math.Max(0, iv.Lo), math.Min(1, iv.Hi)
	return iv, nil
}
