// Package version is the gpumem release a binary or plugin was built from. The build
// stamps it (make, cgo/build.sh and packaging/build.sh pass packaging/version.sh
// --ldflags); a plain go build falls back to what the Go toolchain records from git.
package version

import (
	"runtime"
	"runtime/debug"
)

// Set at link time with -X github.com/gpumem/gpumem/internal/version.Version=... and
// ...Revision=...; empty in a build that was not stamped.
var (
	Version  string
	Revision string
)

// Info is what a build knows about itself.
type Info struct {
	Version   string // semantic version from git describe, e.g. v0.1.0 or v0.0.0-42-gabc1234
	Revision  string // git commit
	GoVersion string // toolchain that built it
}

// Get returns this build's version, revision and Go version. An unstamped build takes
// the module version and commit the toolchain embedded, and says devel/unknown where
// there is neither (go test, go run outside git).
func Get() Info {
	return fill(Info{Version: Version, Revision: Revision, GoVersion: runtime.Version()}, debug.ReadBuildInfo)
}

func fill(i Info, read func() (*debug.BuildInfo, bool)) Info {
	if i.Version == "" || i.Revision == "" {
		if bi, ok := read(); ok {
			if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				i.Version = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && i.Revision == "" {
					i.Revision = s.Value
				}
			}
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	if i.Revision == "" {
		i.Revision = "unknown"
	}
	return i
}

// String is the one-line form --version and the plugins' log line print:
// "v0.1.0 (revision abc1234, go1.26.8)".
func String() string { return Get().String() }

func (i Info) String() string {
	return i.Version + " (revision " + i.Revision + ", " + i.GoVersion + ")"
}
