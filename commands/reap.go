package commands

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/stream"
)

func reapCommand() *cli.Command {
	return &cli.Command{
		Name:  "reap",
		Usage: "finish agents whose supervisor is gone: kill what is left, record the end",
		UsageText: "agt reap [--dry-run]\n\n" +
			"For every lost agent (its supervisor died: kill -9, OOM, reboot) kills what is left of\n" +
			"its process tree, verifying each process first, and writes its final status. Prints\n" +
			"one NDJSON line per agent reaped, nothing when there is nothing to do.\n\n" +
			"EXAMPLES:\n" +
			"   agt reap\n" +
			"   */5 * * * * agt reap >>\"$HOME/.local/state/agt/reap.log\" 2>&1   # crontab",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be reaped, change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef(c, "reap takes no arguments")
			}
			d, err := openRunDir(c)
			if err != nil {
				return err
			}
			agents, err := agentsNamed(d, nil, true)
			if err != nil {
				return err
			}
			failed := false
			for _, a := range agents {
				st := spawn.Observe(a)
				if st.State != stream.Lost {
					continue
				}
				var v any = map[string]string{"name": a.Name, "action": "would reap", "reason": st.Reason}
				if !c.Bool("dry-run") {
					r, err := spawn.Reap(a)
					if err != nil {
						fmt.Fprintf(c.App.ErrWriter, "agt: reap %s: %v\n", a.Name, err)
						failed = true
						continue
					}
					if r == nil {
						continue // a supervisor came back, or another reap got there first
					}
					v = r
				}
				b, _ := json.Marshal(v)
				fmt.Fprintf(c.App.Writer, "%s\n", b)
			}
			if failed {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
