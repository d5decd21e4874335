package view

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// templates holds one template set per page, each the layout plus the
// page's "main".
type templates struct{ sets map[string]*template.Template }

var pageNames = []string{"suites", "suite", "run", "compare", "notfound"}

func loadTemplates() (*templates, error) {
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("view: templates: %w", err)
	}
	t := &templates{sets: map[string]*template.Template{}}
	for _, name := range pageNames {
		set, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("view: template %s: %w", name, err)
		}
		t.sets[name] = set
	}
	return t, nil
}

// staticFiles serves the embedded style sheet and script.
func staticFiles() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	return http.StripPrefix("/static/", http.FileServerFS(sub))
}

// layout is what every page's frame shows.
type layout struct {
	Title  string
	Crumbs []crumb
	// Events is the URL of the page's event stream ("" when nothing is
	// live).
	Events       string
	Live         bool
	Source       string
	Reconnecting string
	Through      uint64
	Body         any
}

type crumb struct{ Name, Href string }

// render writes page name with data; part=main writes only the page's
// content, which a live page fetches again when the log moves on.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, l layout) {
	live, feedErr := s.status()
	l.Live = live
	if feedErr != nil {
		l.Reconnecting = feedErr.Error()
	}
	if !live {
		l.Source, l.Events = s.cfg.File, ""
	}
	tmpl := "layout"
	if r.URL.Query().Get("part") == "main" {
		tmpl = "main"
	}
	var buf bytes.Buffer
	if err := s.pages.sets[name].ExecuteTemplate(&buf, tmpl, l); err != nil {
		s.log.Error("view: render", "page", name, "err", err)
		http.Error(w, fmt.Sprintf("render %s: %v", name, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// notFound writes the 404 page, saying what was not found.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request, what string) {
	s.render(w, r, http.StatusNotFound, "notfound", layout{Title: "not found", Through: s.Through(), Body: what})
}

// collapseOver is the size past which a text is shown collapsed.
const (
	collapseBytes = 800
	collapseLines = 12
)

var funcs = template.FuncMap{
	"pct": func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100**p)
	},
	"pts": func(v float64) string { return fmt.Sprintf("%+.1f", 100*v) },
	"f3": func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.3f", *p)
	},
	"p4": func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) },
	// fnum and fnum4 show an optional number in full or to 4 digits; "–"
	// when it is absent.
	"fnum":  func(p *float64) string { return optNum(p, -1) },
	"fnum4": func(p *float64) string { return optNum(p, 4) },
	"short": func(d events.Digest) string {
		h := d.Hex()
		if len(h) > 12 {
			return h[:12]
		}
		return h
	},
	"hex":    func(d events.Digest) string { return d.Hex() },
	"colour": outcomeColour,
	"join":   func(xs []string) string { return strings.Join(xs, ", ") },
	"long": func(s string) bool {
		return len(s) > collapseBytes || strings.Count(s, "\n") >= collapseLines
	},
	"lines": func(s string) int { return strings.Count(strings.TrimRight(s, "\n"), "\n") + 1 },
	"size":  func(s string) int { return len(s) },
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"millis": func(ms uint64) string { return (time.Duration(ms) * time.Millisecond).String() },
	"opt": func(p *uint64) string {
		if p == nil {
			return "unknown"
		}
		return strconv.FormatUint(*p, 10)
	},
	"progress": func(done, of int) int {
		if of == 0 {
			return 0
		}
		return 100 * done / of
	},
	"add":    func(a, b int) int { return a + b },
	"deref":  func(b *bool) bool { return b != nil && *b },
	"derefF": func(p *float64) float64 { return *p },
}

// rawText renders one JSON value of the report as the page shows it.
func rawText(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "null" {
		return "–"
	}
	return s
}

// optNum renders an optional number to prec significant digits (-1: as
// many as it takes); "–" when absent.
func optNum(p *float64, prec int) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'g', prec, 64)
}
