package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"agt/spawn"
)

func approveCommand() *cli.Command {
	return &cli.Command{
		Name:  "approve",
		Usage: "allow what a conversation agent asks permission for",
		UsageText: "agt approve [--always] NAME [ID]\n\n" +
			"Allows a conversation agent's pending permission request.\n\n" +
			"EXAMPLES:\n" +
			"   agt approve fix-auth\n" +
			"   agt approve --always fix-auth toolu_01MockAbc",
		Description: helpText("approve"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "always", Usage: "allow the like for the rest of the session"},
		},
		Action: func(c *cli.Context) error { return runAnswer(c, spawn.OpApprove) },
	}
}

func denyCommand() *cli.Command {
	return &cli.Command{
		Name:  "deny",
		Usage: "refuse what a conversation agent asks permission for",
		UsageText: "agt deny [--message TEXT] NAME [ID]\n\n" +
			"Refuses a conversation agent's pending permission request.\n\n" +
			"EXAMPLES:\n" +
			"   agt deny fix-auth\n" +
			"   agt deny --message 'use make clean' fix-auth",
		Description: helpText("deny"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "what the agent is told instead"},
		},
		Action: func(c *cli.Context) error { return runAnswer(c, spawn.OpDeny) },
	}
}

func runAnswer(c *cli.Context, op string) error {
	args := c.Args().Slice()
	if err := flagAfterName(c, args); err != nil {
		return err
	}
	if len(args) < 1 || len(args) > 2 {
		return usagef(c, "want NAME and at most one ID: agt %s NAME [ID]", op)
	}
	a, err := oneAgent(c, args[0])
	if err != nil {
		return err
	}
	req := spawn.Request{Op: op, Always: c.Bool("always"), Message: c.String("message")}
	if len(args) == 2 {
		req.ID = args[1]
	}
	r, err := spawn.Control(c.Context, a, req)
	if err != nil {
		return controlError(a, err)
	}
	verb := "allowed"
	if op == spawn.OpDeny {
		verb = "denied"
	}
	fmt.Fprintf(c.App.ErrWriter, "%s %s %s (%s)\n", verb, a.Name, r.Tool, r.ID)
	return nil
}

func interruptCommand() *cli.Command {
	return &cli.Command{
		Name:  "interrupt",
		Usage: "cancel a conversation agent's running turn",
		UsageText: "agt interrupt NAME\n\n" +
			"Cancels the turn a conversation agent is running; it then waits for input.\n\n" +
			"EXAMPLES:\n" +
			"   agt interrupt fix-auth && agt send fix-auth 'stop; do this instead'",
		Description: helpText("interrupt"),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) != 1 {
				return usagef(c, "want one NAME: agt interrupt NAME")
			}
			a, err := oneAgent(c, args[0])
			if err != nil {
				return err
			}
			if _, err := spawn.Control(c.Context, a, spawn.Request{Op: spawn.OpInterrupt}); err != nil {
				return controlError(a, err)
			}
			return nil
		},
	}
}
