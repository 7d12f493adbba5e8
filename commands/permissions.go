package commands

import (
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
)

func permissionsCommand() *cli.Command {
	return &cli.Command{
		Name:  "permissions",
		Usage: "list the permission requests agents wait on",
		UsageText: "agt permissions [--json] [NAME...]\n\n" +
			"Lists the pending permission requests of conversation agents, oldest first: the inbox that\n" +
			"agt approve and agt deny answer.\n\n" +
			"EXAMPLES:\n" +
			"   agt permissions\n" +
			"   agt permissions | jq -r '\"agt approve \\(.agent) \\(.id)\"'",
		Description: helpText("permissions"),
		Flags:       []cli.Flag{jsonFlag()},
		Action:      runPermissions,
	}
}

// permissionRow is one pending request as the agent's inbox holds it, with the agent's name.
type permissionRow struct {
	Agent string `json:"agent"`
	spawn.Permission
}

func runPermissions(c *cli.Context) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "", true)
	if err != nil {
		return err
	}
	var rows []permissionRow
	for _, a := range agents {
		for _, p := range spawn.Permissions(a) {
			rows = append(rows, permissionRow{Agent: a.Name, Permission: p})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].TS.Before(rows[j].TS) })
	if out.mode == modeTable {
		table := make([][]string, len(rows))
		now := time.Now()
		for i, r := range rows {
			table[i] = []string{r.Agent, r.ID, r.Tool, oneLine(string(r.Input), 60), since(r.TS, now)}
		}
		return out.table([]string{"AGENT", "ID", "TOOL", "INPUT", "FOR"}, table)
	}
	for _, r := range rows {
		if err := out.item(r, nil); err != nil {
			return err
		}
	}
	return nil
}
