package commands

import (
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
)

func permissionsCommand() *cli.Command {
	return &cli.Command{
		Name:  "permissions",
		Usage: "list the permission requests agents wait on",
		UsageText: "agt permissions [--json | --format TEMPLATE] [NAME...]\n\n" +
			"Lists the pending permission requests of conversation agents, oldest first: the inbox that\n" +
			"agt approve and agt deny answer.\n\n" +
			"EXAMPLES:\n" +
			"   agt permissions\n" +
			"   agt permissions | jq -r '\"agt approve \\(.agent) \\(.id)\"'",
		Description: helpText("permissions"),
		Flags:       []cli.Flag{jsonFlag(), formatFlag("permissions", permissionRow{}, "{{.agent}} {{.id}}")},
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
			// The input as text: the command, the path, the plan (not JSON with \u0026 for &).
			input := strings.TrimPrefix(waitingLine(&spawn.Waiting{Reason: "permission", ID: r.ID, Tool: r.Tool, Input: r.Input}), "permission: "+r.Tool+" ")
			table[i] = []string{r.Agent, safeLine(r.ID, 40), safeLine(r.Tool, 30), safeLine(input, 60), since(r.TS, now)}
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
