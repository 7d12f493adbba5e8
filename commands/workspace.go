package commands

import (
	"encoding/json"

	"github.com/urfave/cli/v2"
)

// workspacePrepare returns what spawn runs, once the name is reserved, to make the agent's
// workspace for --workspace; nil when the agent runs in dir itself.
func workspacePrepare(c *cli.Context, name, dir string) (func() (string, json.RawMessage, func(), error), error) {
	switch mode := c.String("workspace"); mode {
	case "none", "auto":
		return nil, nil
	default:
		return nil, usagef(c, "--workspace %q: want auto, jj, git or none", mode)
	}
}
