package view

import (
	"errors"
	"net/http"

	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/view/pages"
)

// compareData is the compare page: its data and, when A and B do not
// compare, why.
type compareData struct {
	Page pages.ComparePage
	Err  string
}

// compareQuery reads the page's query: a, b and allow_changed.
func compareQuery(r *http.Request) (a, b string, allow bool) {
	q := r.URL.Query()
	return q.Get("a"), q.Get("b"), q.Get("allow_changed") != ""
}

// compareStatus is the HTTP status of a comparison that failed: a suite
// the log has not (404), or treatments that do not pair (400).
func compareStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, pages.ErrNotSubmitted):
		return http.StatusNotFound
	case errors.Is(err, measure.ErrNoPairing), errors.Is(err, measure.ErrUnknownTreatment):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func (s *Server) comparePage(w http.ResponseWriter, r *http.Request) {
	a, b, allow := compareQuery(r)
	var p pages.ComparePage
	var err error
	s.read(func(m *pages.Model) { p, err = m.Compare(a, b, allow) })
	d := compareData{Page: p}
	if err != nil {
		d.Err = err.Error()
	}
	s.render(w, r, compareStatus(err), "compare", layout{Title: "compare", Through: p.Through,
		Crumbs: []crumb{{"compare", "/compare"}}, Body: d})
}

func (s *Server) compareJSON(w http.ResponseWriter, r *http.Request) {
	a, b, allow := compareQuery(r)
	var p pages.ComparePage
	var err error
	s.read(func(m *pages.Model) { p, err = m.Compare(a, b, allow) })
	if err != nil {
		writeJSON(w, compareStatus(err), map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, p)
}
