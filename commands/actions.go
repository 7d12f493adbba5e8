package commands

import (
	"context"
	"fmt"
	"os"

	"agt/config"
	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// fleetAction is what a person does to an agent from agt top's keys or agt serve's buttons:
// it runs the code of agt approve, deny, send, interrupt and stop, so that what those refuse
// (an agent answering itself, a spent budget) is refused here too.
type fleetAction struct {
	What   string // approve, deny, send, interrupt, stop
	ID     string // approve, deny: the request answered; "" for the only pending one
	Always bool   // approve: allow the like for the rest of the session
	Text   string // deny: what the agent is told instead; send: the message
	Queue  bool   // send: deliver it when the running turn ends
}

// act does the action to the agent of row and says what it did in one line.
func (f *localFleet) act(ctx context.Context, act fleetAction, row *topRow) (string, error) {
	a, err := f.agent(row)
	if err != nil {
		return "", err
	}
	name := a.Name
	switch act.What {
	case "approve", "deny":
		op := spawn.OpApprove
		if act.What == "deny" {
			op = spawn.OpDeny
		}
		rep, err := answer(ctx, a, op, act.ID, act.Always && op == spawn.OpApprove, act.Text)
		if err != nil {
			return "", err
		}
		return answered(name, op, rep), nil
	case "send":
		if err := budgetLeft(f.d); err != nil {
			return "", err
		}
		rep, err := sendMessage(ctx, a, spawn.Request{Op: spawn.OpSend, Text: act.Text, Queue: act.Queue})
		if err != nil {
			return "", err
		}
		if rep.Queued {
			return fmt.Sprintf("queued for %s (%d bytes)", name, len(act.Text)), nil
		}
		return fmt.Sprintf("sent to %s (%d bytes)", name, len(act.Text)), nil
	case "interrupt":
		if err := interruptTurn(ctx, a); err != nil {
			return "", err
		}
		return "interrupted " + name, nil
	case "stop":
		st, err := spawn.Stop(ctx, a, -1)
		if err != nil {
			return "", err
		}
		return stoppedLine(name, st.State), nil
	}
	return "", fmt.Errorf("no action %q: want approve, deny, send, interrupt or stop", act.What)
}

// stoppedLine is what top and serve say of a stop that ended with the agent in state:
// "stopped NAME", or "NAME already exited" when it had ended before (as agt stop says it),
// the state said once.
func stoppedLine(name, state string) string {
	if state == "" || state == stream.Stopped {
		return "stopped " + name
	}
	return name + " already " + state
}

// budgetLeft refuses when the run directory's budget (max_cost_total of the agt.toml where agt
// runs) is spent: agt send checks it, and so do top and serve.
func budgetLeft(d *state.Dir) error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg, err := config.Load(dir)
	if err != nil || cfg.MaxCostTotal <= 0 {
		return err
	}
	return spawn.CheckBudget(d, cfg.MaxCostTotal)
}
