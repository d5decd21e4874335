// Package sum is a small package whose tests partly fail, on purpose: its
// gotestsum JUnit report is the grader's fixture of a real test runner's
// output (see ../README.md).
package sum

// Sum adds xs, but wrongly drops negative numbers (the failures).
func Sum(xs ...int) int {
	t := 0
	for _, x := range xs {
		if x > 0 {
			t += x
		}
	}
	return t
}
