package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/factline/factline/events"
	"github.com/factline/factline/view/pages"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/suites", http.StatusFound)
	})
	m.HandleFunc("GET /suites", s.suitesPage)
	m.HandleFunc("GET /suites/{suite}", s.suitePage)
	m.HandleFunc("GET /suites/{suite}/runs/{run}", s.runPage)
	m.HandleFunc("GET /compare", s.comparePage)
	m.HandleFunc("GET /api/compare", s.compareJSON)
	m.HandleFunc("GET /api/suites", s.suitesJSON)
	m.HandleFunc("GET /api/suites/{suite}", s.suiteJSON)
	m.HandleFunc("GET /api/suites/{suite}/runs/{run}", s.runJSON)
	m.HandleFunc("GET /events", s.events)
	m.HandleFunc("GET /blobs/{digest}", s.serveBlob)
	m.Handle("GET /static/", staticFiles())
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.notFound(w, r, fmt.Sprintf("the viewer has no page at %s", r.URL.Path))
	})
	s.mux = m
}

// eventsURL is the event stream of a page rendered through sequence
// through.
func eventsURL(suite, run string, through uint64) string {
	q := url.Values{}
	if suite != "" {
		q.Set("suite", suite)
	}
	if run != "" {
		q.Set("run", run)
	}
	q.Set("since", strconv.FormatUint(through, 10))
	return "/events?" + q.Encode()
}

func (s *Server) suitesPage(w http.ResponseWriter, r *http.Request) {
	var p pages.SuitesPage
	s.read(func(m *pages.Model) { p = m.Suites() })
	s.render(w, r, http.StatusOK, "suites", layout{Title: "suites", Through: p.Through, Events: eventsURL("", "", p.Through), Body: p})
}

// suiteData is the suite page: its page data and the report decoded for
// the tables and plots.
type suiteData struct {
	Page   pages.SuitePage
	Report *reportView
	Head   []string
	Rows   []treatmentRow
	// ZeroCounts are the count columns left out of the table for being 0
	// in every treatment, and SkippedPassAtK the pass@k columns left out
	// of a long run of them (fitReport).
	ZeroCounts, SkippedPassAtK []string
	Plots                      []template.HTML
	Err                        string
	// MaxRuns bounds the run list the page shows: a suite of thousands
	// of runs is read through its grid.
	MaxRuns int
}

// maxRunRows is how many runs a suite page lists.
const maxRunRows = 1000

// treatmentRow is one treatment's row of the report table: each cell
// shows a report field and carries its JSON text.
type treatmentRow struct {
	Treatment string
	Cells     []cell
}

type cell struct {
	Field, Raw, Text string
}

func (s *Server) suitePage(w http.ResponseWriter, r *http.Request) {
	suite := r.PathValue("suite")
	var p pages.SuitePage
	var ok bool
	s.read(func(m *pages.Model) { p, ok = m.Suite(suite) })
	if !ok {
		s.notFound(w, r, fmt.Sprintf("the log holds no suite named %q (read through sequence %d)", suite, s.Through()))
		return
	}
	d := suiteData{Page: p, MaxRuns: maxRunRows}
	if p.Submitted {
		rep, err := decodeReport(p.Report)
		if err != nil {
			d.Err = err.Error()
		} else {
			d.Report = rep
			d.Head, d.Rows, d.ZeroCounts, d.SkippedPassAtK = fitReport(reportTable(rep))
			d.Plots = []template.HTML{passRatePlot(rep), mixPlot(p.Mix)}
			if len(rep.Comparisons) > 0 {
				d.Plots = append(d.Plots, differencePlot(rep))
			}
			if hasScores(rep) {
				d.Plots = append(d.Plots, scorePlot(rep))
			}
		}
	}
	s.render(w, r, http.StatusOK, "suite", layout{Title: suite, Through: p.Through, Events: eventsURL(suite, "", p.Through),
		Crumbs: []crumb{{suite, "/suites/" + suite}}, Body: d})
}

// reportTable lays out the treatment table: the count columns the report
// has, the pass rate and its intervals, pass@k, and usage, every cell
// from the report's JSON.
func reportTable(r *reportView) ([]string, []treatmentRow) {
	var head []string
	var rows []treatmentRow
	for i, t := range r.Treatments {
		row := treatmentRow{Treatment: t.Treatment}
		add := func(field, h, raw, text string) {
			if i == 0 {
				head = append(head, h)
			}
			row.Cells = append(row.Cells, cell{Field: field, Raw: raw, Text: text})
		}
		for _, c := range countColumns {
			if v, ok := t.Raw[c.Field]; ok {
				add(c.Field, c.Head, compact(v), rawText(v))
			}
		}
		rate := "–"
		if t.PassRate != nil {
			rate = fmt.Sprintf("%.1f%%", 100**t.PassRate)
		}
		add("pass_rate", "pass rate", compact(t.Raw["pass_rate"]), rate)
		ci := "–"
		if t.Wilson != nil {
			ci = fmt.Sprintf("[%.1f%%, %.1f%%]", 100*t.Wilson.Lo, 100*t.Wilson.Hi)
		}
		add("wilson", "95% Wilson", compact(t.Raw["wilson"]), ci)
		se := "–"
		if t.ClusteredSE != nil {
			se = fmt.Sprintf("%.3f", *t.ClusteredSE)
		}
		add("clustered_se", "clustered SE", compact(t.Raw["clustered_se"]), se)
		for k := 1; k <= int(r.Trials); k++ {
			v, raw := "–", "null"
			for _, p := range t.PassAtK {
				if p.K == k {
					v, raw = fmt.Sprintf("%.3f", p.Value), strconv.FormatFloat(p.Value, 'g', -1, 64)
				}
			}
			add(fmt.Sprintf("pass_at_k.%d", k), fmt.Sprintf("pass@%d", k), raw, v)
		}
		u := t.Usage
		usage := map[string]json.RawMessage{}
		_ = json.Unmarshal(t.Raw["usage"], &usage)
		add("usage.tokens", "tokens", compact(usage["tokens"]), known(u.Tokens, u.TokensKnown, u.TokensUnknown))
		add("usage.cost", "cost", compact(usage["cost"]), known(u.Cost, u.CostKnown, u.CostUnknown))
		add("usage.wall_millis", "wall", compact(usage["wall_millis"]), fmt.Sprintf("%.1fs", float64(u.WallMillis)/1000))
		rows = append(rows, row)
	}
	return head, rows
}

// known shows a usage total with its unknown count apart, as the report's
// table does: unknown never reads as zero.
func known(total *uint64, knownN, unknown int) string {
	switch {
	case total == nil || knownN == 0 && unknown > 0:
		return fmt.Sprintf("unknown (%d)", unknown)
	case unknown == 0:
		return strconv.FormatUint(*total, 10)
	}
	return fmt.Sprintf("%d + %d unknown", *total, unknown)
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// runData is the run page: its data and the requests the model received,
// read from the blobs their turns name, by the turn's index in Page.Turns.
type runData struct {
	Page     pages.RunPage
	Requests map[int]request
}

// request is one rendered request as the page shows it.
type request struct {
	Bytes    int
	Messages []message
	Raw      string
	Err      string
	// Same is how many leading messages are those of the previous turn's
	// request, left out of Messages; SameTurn is that turn.
	Same     int
	SameTurn uint32
	// Demands are the request's tool choice and output format, as
	// "member: JSON" lines (none unless an external agent asked).
	Demands []string
}

type message struct {
	Role, Content string
	Extra         []string
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	suite, run := r.PathValue("suite"), r.PathValue("run")
	var p pages.RunPage
	var ok, suiteKnown bool
	s.read(func(m *pages.Model) {
		p, ok = m.Run(suite, run)
		suiteKnown = m.HasSuite(suite)
	})
	if !ok {
		what := fmt.Sprintf("suite %q has no run named %q (read through sequence %d)", suite, run, s.Through())
		if !suiteKnown {
			what = fmt.Sprintf("the log holds no suite named %q, so no run %q in it (read through sequence %d)", suite, run, s.Through())
		}
		s.notFound(w, r, what)
		return
	}
	// Each request repeats the one before and adds to it: shown whole,
	// the page grows with the square of the turns. A turn shows what
	// differs from the previous turn's request; the exact bytes are a link.
	d := runData{Page: p, Requests: map[int]request{}}
	var prev []message
	for i, t := range p.Turns {
		req := s.request(r, t.Request)
		full := req.Messages
		if i > 0 && len(full) > 0 {
			if same := samePrefix(prev, full); same > 0 {
				req.Messages, req.Same, req.SameTurn = full[same:], same, p.Turns[i-1].Turn
			}
		}
		prev = full
		d.Requests[i] = req
	}
	s.render(w, r, http.StatusOK, "run", layout{Title: run, Through: p.Through, Events: eventsURL(suite, run, p.Through),
		Crumbs: []crumb{{suite, "/suites/" + suite}, {run, "/suites/" + suite + "/runs/" + run}}, Body: d})
}

// samePrefix counts the leading messages of b that are those of a.
func samePrefix(a, b []message) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].Role == b[n].Role && a[n].Content == b[n].Content && slices.Equal(a[n].Extra, b[n].Extra) {
		n++
	}
	return n
}

// request reads and lays out a turn's request: its messages, each with
// its role and content, and what the agent demanded of the answer, when
// it is the JSON the model ports render; else its text.
func (s *Server) request(r *http.Request, d events.Digest) request {
	b, err := s.blob(r.Context(), d)
	if err != nil {
		return request{Err: err.Error()}
	}
	return readRequest(b)
}

// demandKeys are the members of a rendered request that hold what an
// external agent demanded of the answer, under each port's name: its tool
// choice, and its output format (the scripted port's output, Chat's
// response_format, Responses' text; Anthropic's output_config.format is
// read apart).
var demandKeys = []string{"tool_choice", "output", "response_format", "text"}

// readRequest lays out a rendered request: its messages when it is the
// JSON the model ports render, else its text.
func readRequest(b []byte) request {
	out := request{Bytes: len(b)}
	var body struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(b, &body) != nil || body.Messages == nil {
		out.Raw = string(b)
		return out
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(b, &top)
	for _, k := range demandKeys {
		if v, ok := top[k]; ok {
			out.Demands = append(out.Demands, k+": "+compact(v))
		}
	}
	// Anthropic's output_config holds the treatment's effort beside the
	// agent's format: only the format is the agent's.
	var config struct {
		Format json.RawMessage `json:"format"`
	}
	if json.Unmarshal(top["output_config"], &config) == nil && len(config.Format) > 0 {
		out.Demands = append(out.Demands, "output_config.format: "+compact(config.Format))
	}
	for _, m := range body.Messages {
		msg := message{}
		_ = json.Unmarshal(m["role"], &msg.Role)
		if c, ok := m["content"]; ok {
			if json.Unmarshal(c, &msg.Content) != nil {
				msg.Content = compact(c)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k != "role" && k != "content" {
				msg.Extra = append(msg.Extra, k+": "+compact(m[k]))
			}
		}
		out.Messages = append(out.Messages, msg)
	}
	return out
}

// The JSON pages are the page data itself: what a test rebuilds from an
// export and compares, and what a script may read.

func (s *Server) suitesJSON(w http.ResponseWriter, r *http.Request) {
	var p pages.SuitesPage
	s.read(func(m *pages.Model) { p = m.Suites() })
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) suiteJSON(w http.ResponseWriter, r *http.Request) {
	var p pages.SuitePage
	var ok bool
	s.read(func(m *pages.Model) { p, ok = m.Suite(r.PathValue("suite")) })
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no suite named %q", r.PathValue("suite"))})
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) runJSON(w http.ResponseWriter, r *http.Request) {
	var p pages.RunPage
	var ok bool
	s.read(func(m *pages.Model) { p, ok = m.Run(r.PathValue("suite"), r.PathValue("run")) })
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("suite %q has no run named %q", r.PathValue("suite"), r.PathValue("run"))})
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
