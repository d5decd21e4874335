package extensions_test

import (
	"context"
	"testing"

	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/extensions/extensionstest"
	"github.com/factline/factline/services/runner/tools"
)

// BenchmarkStartStop is what one run pays for its extension: admission
// (hashing the executable), start, MCP initialisation, listing tools and
// killing the process group.
func BenchmarkStartStop(b *testing.B) {
	bin := extensionstest.BuildServer(b)
	l := allowlist(b, bin, "", extensionstest.NewFiles(b))
	dir := b.TempDir()
	for b.Loop() {
		entries, err := extensions.Admit(l, []string{"testsrv"})
		if err != nil {
			b.Fatal(err)
		}
		set, err := extensions.Start(context.Background(), entries, extensions.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		set.Stop()
	}
}

// BenchmarkCall is one validated call of a read tool on a running server.
func BenchmarkCall(b *testing.B) {
	bin := extensionstest.BuildServer(b)
	entries, err := extensions.Admit(allowlist(b, bin, "", extensionstest.Files{}), []string{"testsrv"})
	if err != nil {
		b.Fatal(err)
	}
	set, err := extensions.Start(context.Background(), entries, extensions.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Stop()
	reg := registryWith(b, set)
	ctx := context.Background()
	for b.Loop() {
		t, args, bad := reg.Check("testsrv__echo", `{"text":"hi"}`)
		if bad != nil {
			b.Fatal(bad.Err)
		}
		if r := reg.Run(ctx, tools.Env{}, t, args); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}
