package extensions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/extensions/extensionstest"
	"github.com/factline/factline/services/runner/tools"
)

// allowlist pins the test server at path with the digest given ("" for
// its real one) and these capabilities.
func allowlist(t testing.TB, path string, digest events.Digest, f extensionstest.Files) *extensions.Allowlist {
	t.Helper()
	return extensionstest.Allowlist(t, path, digest, f, "1s", "")
}

// registryWith is a registry of read_file and the set's tools, as a
// runner builds one for an attempt.
func registryWith(t testing.TB, set *extensions.Set) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry([]string{"read_file"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range set.Tools() {
		if err := reg.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func startSet(t testing.TB, l *extensions.Allowlist) *extensions.Set {
	t.Helper()
	entries, err := extensions.Admit(l, []string{"testsrv"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := extensions.Start(ctx, entries, extensions.Options{Dir: t.TempDir(), Environ: []string{"PATH=" + os.Getenv("PATH")}, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Stop)
	return set
}

// Discovery: the server's tools are listed; only allowlisted ones are
// exposed, with the allowlist's effect class and approval, whatever the
// server annotates; the rest are recorded as withheld.
func TestDiscovery(t *testing.T) {
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	set := startSet(t, allowlist(t, bin, "", f))
	if got := extensionstest.Lines(t, f.Marker); len(got) != 1 {
		t.Fatalf("the server started %d times, want once", len(got))
	}
	recs := set.Records()
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	r := recs[0]
	digest, _ := extensions.FileDigest(bin)
	if r.Name != "testsrv" || r.Command != bin || r.Executable != digest || r.Server != "factline-test-server" || r.Version != "1.2.3" || r.Protocol == "" {
		t.Fatalf("record %+v", r)
	}
	if !slices.Equal(r.Withheld, []string{"secret"}) {
		t.Fatalf("withheld %v, want [secret]", r.Withheld)
	}
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"echo", "add", "fail", "publish", "stall"}) {
		t.Fatalf("exposed %v (the allowlisted but not offered tool must not appear)", names)
	}
	var contracts = map[string]tools.Contract{}
	for _, tl := range set.Tools() {
		contracts[tl.Contract().Name] = tl.Contract()
	}
	pub := contracts["testsrv__publish"]
	// The server annotates publish readOnlyHint; the allowlist says external.
	if pub.Effect != events.EffectExternal || pub.Approval != tools.ApprovalAlways {
		t.Fatalf("publish contract %+v: the annotation decided", pub)
	}
	if c := contracts["testsrv__echo"]; c.Effect != events.EffectRead || c.Approval != tools.ApprovalNever || !strings.Contains(string(c.Schema), `"text"`) {
		t.Fatalf("echo contract %+v", c)
	}
	if _, ok := contracts["testsrv__secret"]; ok {
		t.Fatal("a tool the allowlist does not list is exposed")
	}
}

// Calls through a registry: success, invalid arguments refused before the
// server sees them, an error result as a typed observation.
func TestCalls(t *testing.T) {
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	set := startSet(t, allowlist(t, bin, "", f))
	reg := registryWith(t, set)
	ctx := context.Background()
	call := func(name, args string) tools.Result {
		tl, a, bad := reg.Check(name, args)
		if bad != nil {
			return *bad
		}
		return reg.Run(ctx, tools.Env{Operation: "op-" + name}, tl, a)
	}
	if r := call("testsrv__echo", `{"text":"hi"}`); r.Err != nil || r.Output != "echo: hi" {
		t.Fatalf("echo: %+v", r)
	}
	if r := call("testsrv__add", `{"a":2,"b":"three"}`); r.Err == nil || r.Err.Code != tools.CodeBadArguments {
		t.Fatalf("add with a string: %+v", r)
	}
	if r := call("testsrv__add", `{"a":2,"b":3,"c":4}`); r.Err == nil || r.Err.Code != tools.CodeBadArguments {
		t.Fatalf("add with an extra field: %+v", r)
	}
	if r := call("testsrv__add", `{"a":2,"b":3}`); r.Err != nil || r.Output != "5" {
		t.Fatalf("add: %+v", r)
	}
	r := call("testsrv__fail", `{}`)
	if r.Err == nil || r.Err.Code != extensions.CodeToolError || r.Err.Message != "the widget is broken" || !strings.Contains(r.Output, "second line") {
		t.Fatalf("fail: %+v", r)
	}
	if !strings.Contains(r.Observation(), `"ok":false`) {
		t.Fatalf("fail observation %s", r.Observation())
	}
	if r := call("testsrv__secret", `{}`); r.Err == nil || r.Err.Code != tools.CodeUnknownTool {
		t.Fatalf("secret: %+v", r)
	}
	if r := call("testsrv__publish", `{"message":"m1"}`); r.Err != nil {
		t.Fatalf("publish: %+v", r)
	}
	// A call that outlives its timeout is cancelled; the session goes on.
	if r := call("testsrv__stall", `{}`); r.Err == nil || r.Err.Code != tools.CodeTimeout {
		t.Fatalf("stall: %+v", r)
	}
	if r := call("testsrv__echo", `{"text":"again"}`); r.Err != nil || r.Output != "echo: again" {
		t.Fatalf("echo after a timeout: %+v", r)
	}
	// The server saw exactly the valid calls: no bad arguments, no secret.
	got := extensionstest.Lines(t, f.Calls)
	want := []string{`echo {"text":"hi"}`, `add {"a":2,"b":3}`, `fail {}`, `publish {"message":"m1"}`, `stall {}`, `echo {"text":"again"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("the server received %q, want %q", got, want)
	}
	// The operation ID travels with the call.
	if sink := extensionstest.Lines(t, f.Sink); !slices.Equal(sink, []string{"op-testsrv__publish m1"}) {
		t.Fatalf("sink %q", sink)
	}
}

// An extension the allowlist does not name, or whose executable is not the
// pinned file, is refused before its process starts.
func TestRefusedBeforeStart(t *testing.T) {
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	l := allowlist(t, bin, events.Digest("sha256:"+strings.Repeat("ab", 32)), f)
	_, err := extensions.Admit(l, []string{"testsrv"})
	var rej *extensions.Rejection
	if !errors.As(err, &rej) || rej.Code != extensions.RejectDigestMismatch || !errors.Is(err, extensions.ErrRejected) {
		t.Fatalf("got %v, want a digest mismatch", err)
	}
	if !strings.HasPrefix(err.Error(), "extension_rejected: testsrv: digest_mismatch: ") {
		t.Fatalf("reason %q", err)
	}
	_, err = extensions.Admit(l, []string{"rogue"})
	if !errors.As(err, &rej) || rej.Code != extensions.RejectNotAllowlisted || rej.Extension != "rogue" {
		t.Fatalf("got %v, want not allowlisted", err)
	}
	// Start checks again: an executable swapped after admission is refused.
	good := allowlist(t, bin, "", f)
	entries, err := extensions.Admit(good, []string{"testsrv"})
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("tampered"))
	fh.Close()
	_, err = extensions.Start(context.Background(), entries, extensions.Options{Dir: t.TempDir()})
	if !errors.As(err, &rej) || rej.Code != extensions.RejectDigestMismatch {
		t.Fatalf("got %v, want a digest mismatch at start", err)
	}
	// A missing executable is refused too.
	e := entries[0]
	e.Command = bin + ".gone"
	if err := extensions.Verify(e); !errors.As(err, &rej) || rej.Code != extensions.RejectUnreadable {
		t.Fatalf("got %v, want unreadable", err)
	}
	if got := extensionstest.Lines(t, f.Marker); len(got) != 0 {
		t.Fatalf("a refused server started: %v", got)
	}
}

// Stop kills the server's whole process group: the server and the child
// it left running.
func TestStopKillsProcessGroup(t *testing.T) {
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	set := startSet(t, allowlist(t, bin, "", f))
	pids := set.PIDs()
	b, err := os.ReadFile(f.Child)
	if err != nil || len(pids) != 1 {
		t.Fatalf("child pid file: %v; servers %v", err, pids)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	set.Stop()
	for _, pid := range []int{pids[0], child} {
		extensionstest.WaitGone(t, pid)
	}
}

// An admitted executable that is no MCP server fails to start with a typed
// error carrying the end of its standard error.
func TestStartFailure(t *testing.T) {
	script := t.TempDir() + "/broken"
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'no protocol here' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := extensions.FileDigest(script)
	if err != nil {
		t.Fatal(err)
	}
	l, err := extensions.Parse("ext.yaml", []byte(fmt.Sprintf("extensions:\n  - name: broken\n    command: %s\n    digest: %s\n    start_timeout: 20s\n    tools:\n      - {name: x, effect: read}\n", script, d)))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := extensions.Admit(l, []string{"broken"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = extensions.Start(context.Background(), entries, extensions.Options{Dir: t.TempDir(), LogDir: t.TempDir()})
	var se *extensions.StartError
	if !errors.As(err, &se) || se.Extension != "broken" || !strings.HasPrefix(err.Error(), "extension_failed: broken: ") || !strings.Contains(err.Error(), "no protocol here") {
		t.Fatalf("got %v, want an extension_failed error with the server's stderr", err)
	}
}

// A server that dies in a call fails that call and every later one with
// EXTENSION_ERROR. The message says what happened, where the model and
// the operator read it: the session is closed, the extension's tools
// fail for the rest of the run, and how its standard error ends. It once
// said only `calling "tools/call": EOF`.
func TestACrashedServerSaysSoInEveryLaterCall(t *testing.T) {
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	set := startSet(t, allowlist(t, bin, "", f))
	reg := registryWith(t, set)
	call := func(text string) tools.Result {
		tl, a, bad := reg.Check("testsrv__echo", `{"text":"`+text+`"}`)
		if bad != nil {
			t.Fatalf("check: %+v", bad)
		}
		return reg.Run(context.Background(), tools.Env{}, tl, a)
	}
	for i, text := range []string{"crash", "after"} {
		r := call(text)
		if r.Err == nil || r.Err.Code != extensions.CodeExtensionError {
			t.Fatalf("call %d: %+v, want %s", i, r, extensions.CodeExtensionError)
		}
		for _, want := range []string{"extension testsrv", "rest of the run", "its stderr ends: mcpserver: asked to crash"} {
			if !strings.Contains(r.Err.Message, want) {
				t.Errorf("call %d (%s): the message %q does not say %q", i, text, r.Err.Message, want)
			}
		}
	}
}

// A server that writes a line of no JSON-RPC on its stdout in the middle
// of a call loses its session: the call's EXTENSION_ERROR says what it
// wrote, not only that the session closed.
func TestAServerBabblingOnStdoutSaysWhatItWrote(t *testing.T) {
	bin := extensionstest.BuildServer(t)
	f := extensionstest.NewFiles(t)
	set := startSet(t, allowlist(t, bin, "", f))
	reg := registryWith(t, set)
	tl, a, bad := reg.Check("testsrv__echo", `{"text":"babble"}`)
	if bad != nil {
		t.Fatalf("check: %+v", bad)
	}
	r := reg.Run(context.Background(), tools.Env{}, tl, a)
	if r.Err == nil || r.Err.Code != extensions.CodeExtensionError {
		t.Fatalf("%+v, want %s", r, extensions.CodeExtensionError)
	}
	for _, want := range []string{`not JSON-RPC on its stdout, which must carry protocol messages only (a log line belongs on stderr): "debug: handling echo"`,
		"extension testsrv", "rest of the run"} {
		if !strings.Contains(r.Err.Message, want) {
			t.Errorf("the message %q does not say %q", r.Err.Message, want)
		}
	}
	if strings.Contains(r.Err.Message, "invalid character") {
		t.Errorf("the message %q still gives the decoder's words", r.Err.Message)
	}
}
