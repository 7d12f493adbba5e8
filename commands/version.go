package commands

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/hosts"
)

// buildInfo is what agt knows of its own build.
type buildInfo struct {
	Version  string `json:"version"`            // the link-time version, the module version, or "devel"
	Revision string `json:"revision,omitempty"` // the VCS revision it was built from
	Time     string `json:"time,omitempty"`     // the revision's commit time
	Modified bool   `json:"modified,omitempty"` // built from a working copy with changes
	Go       string `json:"go"`
	// Protocol is what this agt speaks to another over a link (hosts.Protocol): a local agt
	// refuses a host whose agt speaks less.
	Protocol int    `json:"protocol"`
	OS       string `json:"os"`   // runtime.GOOS: agt hosts install checks a host against it
	Arch     string `json:"arch"` // runtime.GOARCH
}

// readBuildInfo fills in what the linker was not told: the module version, else the VCS
// revision that go build stamps into binaries built from a checkout.
func readBuildInfo(linked string) buildInfo {
	b := buildInfo{Version: linked, Go: runtime.Version(), Protocol: hosts.Protocol, OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "devel"
		}
		return b
	}
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	for _, s := range bi.Settings {
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

// String is the one line --version prints after "agt version": "devel (10f4dce5e2a1, modified)",
// or the pseudo-version go build gives a checkout, which names the revision already
// ("v0.0.0-20261124204429-10f4dce5e2a1+dirty").
func (b buildInfo) String() string {
	s := b.Version
	if rev := b.Revision; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if strings.Contains(s, rev) {
			return s
		}
		s += " (" + rev
		if b.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

func versionCommand(info buildInfo) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print agt's version and the revision it was built from",
		UsageText: "agt version [--json] [--host HOST]\n\n" +
			"Prints the version (set at link time, else the module version, else devel), the VCS\n" +
			"revision and whether the working copy had changes, and the Go version. With --host,\n" +
			"each host's agt answers (NDJSON with a host field when piped); $AGT_HOST does not\n" +
			"move it.\n\n" +
			"EXAMPLES:\n" +
			"   agt version\n" +
			"   agt --version\n" +
			"   agt version --host all --json\n" +
			"   agt version --json | jq -r .revision",
		Description: helpText("version"),
		Flags:       []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef(c, "version takes no arguments")
			}
			// Text even when piped, as people read it (agt version | head -1); --json for tools.
			if c.Bool("json") {
				return (&output{w: c.App.Writer}).item(info, nil)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "agt version %s\n", info)
			if info.Revision != "" {
				fmt.Fprintf(w, "revision %s", info.Revision)
				if info.Time != "" {
					fmt.Fprintf(w, " (%s)", info.Time)
				}
				fmt.Fprintln(w)
			}
			_, err := fmt.Fprintf(w, "%s %s/%s\n", info.Go, runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
