package sum

import "testing"

func TestEmpty(t *testing.T) {
	if Sum() != 0 {
		t.Fatal("empty")
	}
}

func TestOne(t *testing.T) {
	if Sum(3) != 3 {
		t.Fatal("one")
	}
}

func TestMany(t *testing.T) {
	if Sum(1, 2, 3) != 6 {
		t.Fatal("many")
	}
}

func TestNegative(t *testing.T) {
	if got := Sum(-1, 2); got != 1 {
		t.Fatalf("Sum(-1, 2) = %d, want 1", got)
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []int
		want int
	}{
		{"positive", []int{4, 5}, 9},
		{"mixed", []int{-4, 5}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Sum(c.xs...); got != c.want {
				t.Errorf("Sum(%v) = %d, want %d", c.xs, got, c.want)
			}
		})
	}
}

func TestLarge(t *testing.T) {
	t.Skip("large inputs are not part of the fixture")
}
