package cases

import (
	"errors"
	"strings"
	"testing"
)

// A case's environment is read with its defaults, travels in the stored
// case, and a case without one encodes none (its digest stays what it was).
func TestCaseEnvironment(t *testing.T) {
	c, err := ParseCase("c.yaml", []byte("id: a\ninstruction: x\nenvironment:\n  image: localhost/tools:1\n  memory: 2GiB\n  cpus: 1.5\n  pids: 512\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Environment
	if e == nil || e.Image != "localhost/tools:1" || e.Workdir != DefaultWorkdir || e.Network != NetworkNone ||
		e.MemoryBytes != 2<<30 || e.MilliCPUs != 1500 || e.Pids != 512 {
		t.Fatalf("environment %+v", e)
	}
	b, _ := c.Encode()
	back, err := DecodeCase(b)
	if err != nil || *back.Environment != *e {
		t.Fatalf("round trip: %+v %v", back.Environment, err)
	}
	plain, _ := ParseCase("c.yaml", []byte("id: a\ninstruction: x\n"))
	if b, _ := plain.Encode(); strings.Contains(string(b), "environment") {
		t.Fatalf("a case without an environment encodes one: %s", b)
	}
	if Apply(plain, nil).Environment != nil {
		t.Fatal("no environment anywhere must leave the process backend")
	}
}

// A treatment's environment is the default of cases that name none; a
// case's own wins.
func TestTreatmentEnvironmentIsTheDefault(t *testing.T) {
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: scripted, scripts: s}\nenvironment: {image: base:1, network: loopback, workdir: /src}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := ParseCase("c.yaml", []byte("id: a\ninstruction: x\n"))
	if e := Apply(plain, tr).Environment; e == nil || e.Image != "base:1" || e.Network != NetworkLoopback || e.Workdir != "/src" {
		t.Fatalf("treatment default: %+v", e)
	}
	own, _ := ParseCase("c.yaml", []byte("id: a\ninstruction: x\nenvironment: {image: own:2}\n"))
	if e := Apply(own, tr).Environment; e == nil || e.Image != "own:2" {
		t.Fatalf("the case's own environment: %+v", e)
	}
}

// Every mistake in an environment is named by file, line and field, in
// the author's words.
func TestBadEnvironments(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"environment: {memory: 1GiB}\n", "bad.yaml:3: environment: image: required"},
		{"environment: {image: ''}\n", "bad.yaml:3: environment.image: want the image's name or ID"},
		{"environment:\n  image: x\n  memory: 2 gigs\n", `bad.yaml:5: environment.memory: size "2 gigs": want a number with a unit`},
		{"environment:\n  image: x\n  memory: 1MiB\n", "bad.yaml:5: environment.memory: 1048576 bytes is too little"},
		{"environment:\n  image: x\n  memory: 1.5B\n", "not a whole number of bytes"},
		{"environment:\n  image: x\n  network: host\n", `bad.yaml:5: environment.network: want "none" or "loopback", got a string ("host")`},
		{"environment:\n  image: x\n  workdir: work\n", `bad.yaml:5: environment.workdir: "work": want an absolute, clean path`},
		{"environment:\n  image: x\n  workdir: /\n", "environment.workdir"},
		{"environment:\n  image: x\n  cpus: 0\n", "bad.yaml:5: environment.cpus: 0: want more than 0"},
		{"environment:\n  image: x\n  cpus: 0.0001\n", "in thousandths at most"},
		{"environment:\n  image: x\n  cpus: two\n", "environment.cpus: want a number of CPUs"},
		{"environment:\n  image: x\n  pids: 1.5\n", "bad.yaml:5: environment.pids"},
		{"environment:\n  image: x\n  pids: 0\n", "environment.pids: 0 is too few"},
		{"environment:\n  image: x\n  gpus: 1\n", "bad.yaml:5: environment.gpus: unknown key"},
		{"environment: ubuntu\n", "bad.yaml:3: environment: want a mapping"},
	}
	for _, c := range cases {
		_, err := ParseCase("bad.yaml", []byte("id: a\ninstruction: x\n"+c.yaml))
		var ce *Error
		if err == nil || !errors.Is(err, ErrInvalid) || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.yaml, err, c.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"2GiB": 2 << 30, "512MiB": 512 << 20, "1.5GiB": 3 << 29, "1GB": 1e9, "1048576": 1 << 20, "64kB": 64000, "7B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "-1GiB", "2XB", "99999999999TiB", "NaN"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
