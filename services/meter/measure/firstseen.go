package measure

// firstSeen keeps one row per key, the rows in the order their keys first
// came: a report's regroupings (by case, by reason) list what they hold in
// the report's order, which is the roster's.
type firstSeen[K comparable, R any] struct {
	rows []R
	at   map[K]int
}

// row returns k's row, appending fresh as that row when k is new. The
// pointer is good until the next call, which may move the rows.
func (g *firstSeen[K, R]) row(k K, fresh R) *R {
	i, ok := g.at[k]
	if !ok {
		if g.at == nil {
			g.at = map[K]int{}
		}
		i = len(g.rows)
		g.at[k] = i
		g.rows = append(g.rows, fresh)
	}
	return &g.rows[i]
}
