package commands

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/stream"
)

func reapCommand() *cli.Command {
	return &cli.Command{
		Name:  "reap",
		Usage: "finish agents whose supervisor is gone: kill what is left, record the end",
		UsageText: "agt reap [--dry-run] [--prune DURATION]\n\n" +
			"For every lost agent (its supervisor died: kill -9, OOM, reboot) kills what is left of\n" +
			"its process tree, verifying each process first, and writes its final status. Prints\n" +
			"one NDJSON line per agent reaped, nothing when there is nothing to do. --prune also\n" +
			"deletes the records (never the workspaces) of agents ended longer ago than DURATION.\n\n" +
			"EXAMPLES:\n" +
			"   agt reap\n" +
			"   agt reap --prune 7d\n" +
			"   */5 * * * * agt reap >>\"$HOME/.local/state/agt/reap.log\" 2>&1   # crontab",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be reaped, change nothing"},
			&cli.StringFlag{Name: "prune", Usage: "also delete the records of agents ended more than `DURATION` ago (7d, 12h)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef(c, "reap takes no arguments")
			}
			d, err := openRunDir(c)
			if err != nil {
				return err
			}
			agents, err := d.Agents()
			if err != nil {
				return err
			}
			var prune time.Duration
			if p := c.String("prune"); p != "" {
				if prune, err = parseAge(p); err != nil {
					return usagef(c, "--prune %q: want a duration such as 7d, 12h or 30m", p)
				}
			}
			failed := false
			for _, a := range agents {
				st := spawn.Observe(a)
				if prune > 0 && stream.IsFinal(st.State) && time.Since(st.Since) > prune {
					v := map[string]string{"name": a.Name, "action": "prune", "state": st.State}
					if c.Bool("dry-run") {
						v["action"] = "would prune"
					} else if ok, err := spawn.Prune(a, prune); err != nil {
						warn(c, "prune", a.Name, err)
						failed = true
						continue
					} else if !ok {
						continue
					}
					b, _ := json.Marshal(v)
					fmt.Fprintf(c.App.Writer, "%s\n", b)
					continue
				}
				if st.State != stream.Lost {
					continue
				}
				var v any = map[string]string{"name": a.Name, "action": "would reap", "reason": st.Reason}
				if !c.Bool("dry-run") {
					r, err := spawn.Reap(a)
					if err != nil {
						warn(c, "reap", a.Name, err)
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

// parseAge reads a duration that may also count days: 7d, 36h, 90m.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("bad days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
}
