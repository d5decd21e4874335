package events_test

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// docSection returns the lines of docs/facts.md from the heading "### name"
// to the next heading.
func docSection(doc, name string) string {
	i := strings.Index(doc, "\n### "+name+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(name)+5:]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// docKeys are the keys of the first field table of a section: the
// backquoted first cell of each row.
func docKeys(section string) []string {
	re := regexp.MustCompile("(?m)^\\| `([a-z_]+)` +\\|")
	var out []string
	for _, m := range re.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

// wireKeys are the msgpack keys of a body's fields.
func wireKeys(body events.Body) []string {
	t := reflect.TypeOf(body)
	var out []string
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("msgpack"), ",")
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// docs/facts.md is the wire format other languages read: its kinds table
// (owner, scope, schema version) and each kind's field table must say what
// the registry and the body types say. control.accepted was once written
// at version 2 while the docs said every kind was at version 1.
func TestFactsDocMatchesTheWire(t *testing.T) {
	data, err := os.ReadFile("../docs/facts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	row := regexp.MustCompile("(?m)^\\| \\[`([a-z.]+)`\\]\\([^)]*\\) +\\| ([a-z]+) +\\| ([a-z]+) +\\| ([0-9]+) \\|$")
	rows := map[events.Kind][]string{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		rows[events.Kind(m[1])] = m[2:]
	}
	bodies := map[events.Kind]events.Body{}
	for _, c := range goldenFacts(t) {
		bodies[c.fact.Kind()] = c.fact.Body
	}
	for _, k := range events.Kinds() {
		r, ok := rows[k]
		if !ok {
			t.Errorf("%s: no row in the kinds table", k)
			continue
		}
		scope := "run"
		if k.SuiteScoped() {
			scope = "suite"
		}
		if want := []string{string(k.Owner()), scope, strconv.Itoa(int(k.Version()))}; !slices.Equal(r, want) {
			t.Errorf("%s: the kinds table says owner/scope/version %v, the registry %v", k, r, want)
		}
		keys := docKeys(docSection(doc, string(k)))
		body, ok := bodies[k]
		if !ok {
			t.Errorf("%s: no golden fixture to read its body type from", k)
			continue
		}
		want := wireKeys(body)
		if !slices.Equal(slices.Sorted(slices.Values(keys)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: the doc's field table has keys %v, the body %v", k, keys, want)
		}
	}
	if len(rows) != len(events.Kinds()) {
		t.Errorf("the kinds table has %d rows for %d kinds", len(rows), len(events.Kinds()))
	}
}

// docs/subjects.md names every control signal a subject may carry.
func TestSubjectsDocNamesEverySignal(t *testing.T) {
	data, err := os.ReadFile("../docs/subjects.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile("(?m)^- `<signal>` is one of (.*)$").FindStringSubmatch(string(data))
	if line == nil {
		t.Fatal("docs/subjects.md does not list the signals")
	}
	for _, s := range events.Signals() {
		if !strings.Contains(line[1], "`"+string(s)+"`") {
			t.Errorf("docs/subjects.md does not list the signal %s", s)
		}
	}
}

// docs/facts.md maps every run status to the terminal contract (seed
// 001/002: succeeded, failed, exhausted, cancelled, needs_human), saying
// who decides it and with which reasons.
func TestFactsDocMapsEveryEnding(t *testing.T) {
	data, err := os.ReadFile("../docs/facts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, "\n#### endings\n")
	if i < 0 {
		t.Fatal("docs/facts.md has no endings section under run.ended")
	}
	section := doc[i+1:]
	if j := strings.Index(section[1:], "\n#"); j >= 0 {
		section = section[:j+1]
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(section, "\n") {
		if m := regexp.MustCompile("^\\| `([a-z_]+)` +\\|(.*)$").FindStringSubmatch(l); m != nil {
			rows[m[1]] = strings.Split(strings.Trim(m[2], " |"), " | ")
		}
	}
	for _, s := range events.RunStatuses() {
		r, ok := rows[string(s)]
		if !ok {
			t.Errorf("the endings table has no row for %s", s)
			continue
		}
		if len(r) != 3 || r[0] == "" || r[1] == "" || r[2] == "" {
			t.Errorf("%s: the row does not say contract state, decider and reasons: %q", s, r)
		}
	}
	if len(rows) != len(events.RunStatuses()) {
		t.Errorf("the endings table has %d rows for %d statuses", len(rows), len(events.RunStatuses()))
	}
}

// docs/facts.md walks one version 2 fact byte by byte and lists the kind
// and role numbers: a reader in another language decodes from those alone,
// so they must be the golden file's bytes and the numbers Encode writes.
func TestFactsDocGivesVersion2ByteByByte(t *testing.T) {
	data, err := os.ReadFile("../docs/facts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	dump := docHexBlock(t, doc, "Byte by byte, the `run.claimed` example")
	want, err := os.ReadFile("testdata/golden/v2/run_claimed.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dump, want) {
		t.Errorf("the doc's bytes\n  %x\nthe golden file's\n  %x", dump, want)
	}
	row := regexp.MustCompile("(?m)^\\| ([0-9]+) \\| `([a-z.]+)` \\| ([0-9]+) \\| `([a-z.]+)` \\|$")
	seen := map[events.Kind]bool{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		for _, p := range [][2]string{{m[1], m[2]}, {m[3], m[4]}} {
			k := events.Kind(p[1])
			if n, _ := strconv.Atoi(p[0]); int(k.KindCode()) != n {
				t.Errorf("the doc numbers %s %d, the code %d", k, n, k.KindCode())
			}
			seen[k] = true
		}
	}
	for _, k := range events.Kinds() {
		if !seen[k] {
			t.Errorf("kind %s has no number in the doc", k)
		}
	}
	roles := regexp.MustCompile("([0-9]) `([a-z]+)`")
	in := doc[strings.Index(doc, "**Role numbers**"):]
	in = in[:strings.Index(in, "\n\n")]
	n := 0
	for _, m := range roles.FindAllStringSubmatch(in, -1) {
		if c, _ := strconv.Atoi(m[1]); int(events.Owner(m[2]).OwnerCode()) != c {
			t.Errorf("the doc numbers role %s %d, the code %d", m[2], c, events.Owner(m[2]).OwnerCode())
		}
		n++
	}
	if n != 6 {
		t.Errorf("the doc numbers %d roles, want 6", n)
	}
}

// docHexBlock returns the bytes of the first code block after marker: the
// leading hex tokens of each line.
func docHexBlock(t *testing.T, doc, marker string) []byte {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("no %q in the doc", marker)
	}
	block := doc[i:]
	block = block[strings.Index(block, "```\n")+4:]
	block = block[:strings.Index(block, "```")]
	hexByte := regexp.MustCompile("^[0-9a-f]{2}$")
	var dump []byte
	for _, line := range strings.Split(block, "\n") {
		for _, tok := range strings.Fields(line) {
			if !hexByte.MatchString(tok) {
				break
			}
			n, _ := strconv.ParseUint(tok, 16, 8)
			dump = append(dump, byte(n))
		}
	}
	return dump
}

// docs/facts.md walks one version 3 fact byte by byte and numbers every
// body key: a reader in another language names the keys from that table
// alone, so it must be the table Encode writes by, number for number.
func TestFactsDocGivesVersion3ByteByByte(t *testing.T) {
	data, err := os.ReadFile("../docs/facts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	want, err := os.ReadFile("testdata/golden/v3/run_claimed.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	if dump := docHexBlock(t, doc, "Byte by byte, the `run.claimed` example in version 3"); !slices.Equal(dump, want) {
		t.Errorf("the doc's bytes\n  %x\nthe golden file's\n  %x", dump, want)
	}
	in := doc[strings.Index(doc, "**Body key numbers.**"):]
	in = in[:strings.Index(in, "\nByte by byte")]
	cell := regexp.MustCompile("([0-9]+) \\| `([a-z_]+)`")
	doced := map[int]string{}
	for _, m := range cell.FindAllStringSubmatch(in, -1) {
		n, _ := strconv.Atoi(m[1])
		if old, dup := doced[n]; dup {
			t.Errorf("the doc numbers %d twice (%s, %s)", n, old, m[2])
		}
		doced[n] = m[2]
	}
	for n, k := range events.BodyKeys {
		if n > 0 && doced[n] != k {
			t.Errorf("body key %d is %q in the code, %q in the doc", n, k, doced[n])
		}
	}
	if len(doced) != len(events.BodyKeys)-1 {
		t.Errorf("the doc numbers %d body keys, the code %d", len(doced), len(events.BodyKeys)-1)
	}
}
