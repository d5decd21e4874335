package version

import (
	"fmt"
	"runtime/debug"
)

// Build describes the binary that is running, as the Go toolchain stamped
// it: the main module's version and, for a build from a checkout, the VCS
// revision and whether the tree had uncommitted changes.
type Build struct {
	// Module is the main module's path.
	Module string `json:"module"`
	// Version is the main module's version: a tag or pseudo-version for
	// `go install mod@version`, "(devel)" for a build from a checkout.
	Version string `json:"version"`
	// Revision is the VCS revision the build came from; empty when the
	// toolchain stamped none (go test, go run, -buildvcs=false).
	Revision string `json:"revision,omitempty"`
	// Time is the revision's commit time, RFC 3339.
	Time string `json:"time,omitempty"`
	// Modified says the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go is the toolchain that built the binary.
	Go string `json:"go"`
}

// Current reads the running binary's build information. A binary built
// without module support (which Go 1.26 no longer produces) reports an
// unknown version rather than failing.
func Current() Build {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{Version: "unknown"}
	}
	return fromInfo(info)
}

func fromInfo(info *debug.BuildInfo) Build {
	b := Build{Module: info.Main.Path, Version: info.Main.Version, Go: info.GoVersion}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line form `factline version` prints.
func (b Build) String() string {
	s := fmt.Sprintf("factline %s", b.Version)
	if b.Revision != "" {
		s += " " + b.Revision
		if b.Modified {
			s += "-dirty"
		}
	}
	if b.Go != "" {
		s += " " + b.Go
	}
	return s
}
