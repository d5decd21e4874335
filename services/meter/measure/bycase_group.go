package measure

// byCase gathers values case by case, the cases in the order their first
// value came: the clusters of a clustered statistic, in a stable order so
// that a seeded bootstrap draws the same resamples on every run.
type byCase[T any] struct {
	order []string
	of    map[string][]T
}

// add puts v among the values of case c.
func (g *byCase[T]) add(c string, v T) {
	if g.of == nil {
		g.of = map[string][]T{}
	}
	if _, seen := g.of[c]; !seen {
		g.order = append(g.order, c)
	}
	g.of[c] = append(g.of[c], v)
}

// clusters returns each case's values, the cases in order.
func (g *byCase[T]) clusters() [][]T {
	out := make([][]T, len(g.order))
	for i, c := range g.order {
		out[i] = g.of[c]
	}
	return out
}
