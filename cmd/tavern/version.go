package main

import (
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// jsonSchemaVersion is the version of the CLI's JSON output (docs/json.md):
// keys are only added within a version; one removed or renamed, or a
// meaning changed, makes the next version.
const jsonSchemaVersion = 1

// buildVersion is what --version reports: the module version and the VCS
// revision the binary was built from (debug.ReadBuildInfo).
type buildVersion struct {
	Version           string `json:"version"`  // module version, "(devel)" for a local build
	Revision          string `json:"revision"` // VCS revision ("" when the build has none)
	Time              string `json:"time"`     // VCS commit time ("" when the build has none)
	Modified          bool   `json:"modified"` // built from a tree with uncommitted changes
	Go                string `json:"go"`
	JSONSchemaVersion int    `json:"json_schema_version"`
}

func readVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", JSONSchemaVersion: jsonSchemaVersion}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version, v.Go = bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line of `tavern --version`.
func (v buildVersion) String() string {
	s := "tavern " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (revision " + rev
		if v.Modified {
			s += ", modified"
		}
		if v.Time != "" {
			s += ", " + v.Time
		}
		s += ")"
	}
	return s + " " + v.Go
}

func printVersion(c *cli.Context) error {
	v := readVersion()
	if c.Bool("json") {
		return printJSON(c, v)
	}
	outf(c, "%s\n", v)
	return nil
}
