package version

import (
	"runtime/debug"
	"testing"
)

func TestABuildFromACheckoutNamesItsRevisionAndWhetherItWasDirty(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/factline/factline", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	b := fromInfo(info)
	if b.Revision != "abc123" || !b.Modified || b.Time != "2026-12-01T00:00:00Z" || b.Module != "github.com/factline/factline" {
		t.Fatalf("fromInfo = %+v", b)
	}
	if got, want := b.String(), "factline (devel) abc123-dirty go1.26.0"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestABuildWithoutVCSStampsSaysOnlyItsVersion(t *testing.T) {
	b := fromInfo(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "m"}})
	if b.Version != "(devel)" || b.Revision != "" || b.Modified {
		t.Fatalf("fromInfo = %+v", b)
	}
	if got := b.String(); got != "factline (devel) go1.26.0" {
		t.Fatalf("String() = %q", got)
	}
}

func TestCurrentReadsTheRunningBinary(t *testing.T) {
	if b := Current(); b.Go == "" || b.Version == "" {
		t.Fatalf("Current() = %+v, want the toolchain and a version", b)
	}
}
