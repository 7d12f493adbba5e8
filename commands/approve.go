package commands

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/termsafe"
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
	id := ""
	if len(args) == 2 {
		id = args[1]
	}
	r, err := answer(c.Context, a, op, id, c.Bool("always"), c.String("message"))
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.ErrWriter, answered(a.Name, op, r))
	return nil
}

// answer allows (op approve) or denies a's pending request id ("" for the only one): what
// agt approve and agt deny do, and top's keys.
func answer(ctx context.Context, a *state.Agent, op, id string, always bool, message string) (*spawn.Reply, error) {
	r, err := spawn.Control(ctx, a, spawn.Request{Op: op, ID: id, Always: always, Message: message})
	if err != nil {
		return nil, controlError(a, err)
	}
	return r, nil
}

// answered says what an answer did: "allowed fix-auth Bash (toolu_01)".
func answered(name, op string, r *spawn.Reply) string {
	verb := "allowed"
	if op == spawn.OpDeny {
		verb = "denied"
	}
	return fmt.Sprintf("%s %s %s (%s)", verb, name, termsafe.Text(r.Tool), termsafe.Text(r.ID))
}

// interruptTurn cancels a's running turn: agt interrupt, and top's key.
func interruptTurn(ctx context.Context, a *state.Agent) error {
	if _, err := spawn.Control(ctx, a, spawn.Request{Op: spawn.OpInterrupt}); err != nil {
		return controlError(a, err)
	}
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
			return interruptTurn(c.Context, a)
		},
	}
}
