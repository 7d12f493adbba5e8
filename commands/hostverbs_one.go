package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/hosts"
)

// The commands of one agent on a host that do more than pass NDJSON back: attach (a terminal
// over ssh -t), send (the message on stdin), logs (raw bytes).

// onePlace is the place and name of a command of one agent, NAME its first argument.
func onePlace(c *cli.Context, plan *hostPlan, synopsis string) (hosts.Place, string, error) {
	if len(plan.groups) != 1 || len(plan.groups[0].names) != 1 {
		return nil, "", usagef(c, "want one NAME: %s", synopsis)
	}
	return plan.groups[0].place, plan.groups[0].names[0], nil
}

// attachOnHosts is attach to an agent on a host: agt attach there, on a terminal that ssh -t
// gives it. The detach keys are this machine's (--detach-keys, else detach_keys here), and
// ssh's own escapes are off: every key reaches the agent but those.
func attachOnHosts(c *cli.Context, plan *hostPlan) error {
	if err := flagAfterName(c, c.Args().Slice()); err != nil {
		return err
	}
	place, name, err := onePlace(c, plan, "agt attach [--detach-keys KEYS] HOST:NAME")
	if err != nil {
		return err
	}
	return attachOnPlace(c, place, name)
}

func attachOnPlace(c *cli.Context, place hosts.Place, name string) error {
	if !isTerminal(os.Stdin) {
		return errors.New("cannot attach: stdin is not a terminal\nhint: run agt attach in a terminal; 'agt send --keys' types into the agent from a script")
	}
	args := []string{"attach"}
	keys := c.String("detach-keys")
	if keys == "" {
		dir, _ := os.Getwd()
		if cfg, err := config.Load(dir); err == nil {
			keys = cfg.DetachKeys
		}
	}
	if keys != "" {
		args = append(args, "--detach-keys="+keys)
	}
	err := place.Run(c.Context, &hosts.Call{Args: append(args, name), Terminal: true})
	return passExit(c, place, err)
}

// sendOnHosts is send to an agent on a host. The message goes on stdin, never in argv; --wait
// prints the turn's events as tail does.
func sendOnHosts(c *cli.Context, plan *hostPlan) error {
	args := c.Args().Slice()
	if err := flagAfterName(c, args); err != nil {
		return err
	}
	if len(args) != 2 {
		return usagef(c, "want NAME and MESSAGE: agt send [--wait] [--queue] HOST:NAME MESSAGE|-")
	}
	place, name, err := onePlace(c, plan, "agt send HOST:NAME MESSAGE")
	if err != nil {
		return err
	}
	flags, err := forwardFlags(c, "json")
	if err != nil {
		return err
	}
	call := &hosts.Call{Stderr: &hostDiagnostics{w: c.App.ErrWriter, host: place.Name()}, Stream: c.Bool("wait")}
	msg := args[1]
	switch {
	case c.Bool("keys"):
		call.Args = joinArgs(c, flags, []string{name, msg})
	default:
		if msg, err = readMessage(c, msg); err != nil {
			return err
		}
		call.Args, call.Stdin = joinArgs(c, flags, []string{"--json", name, "-"}), strings.NewReader(msg)
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	if out.mode == modeTable {
		out.view = newTranscript(out, []string{qualified(place.Name(), name)})
	}
	fl := &hostFollower{out: out, errw: c.App.ErrWriter}
	lw := &lineWriter{fn: func(line []byte) error {
		if t := tagHost(line, place.Name()); t != nil {
			return fl.print(t)
		}
		return nil
	}}
	call.Stdout = lw
	err = place.Run(c.Context, call)
	lw.Close()
	if err == nil && !c.Bool("wait") && isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "sent to %s (%d bytes)\n", qualified(place.Name(), name), len(msg))
	}
	return passExit(c, place, err)
}

// logsOnHosts is logs of an agent on a host: its raw output, byte for byte, as logs is.
func logsOnHosts(c *cli.Context, plan *hostPlan) error {
	place, name, err := onePlace(c, plan, "agt logs [-f] [-n N] [--stderr] HOST:NAME")
	if err != nil {
		return err
	}
	flags, err := forwardFlags(c)
	if err != nil {
		return err
	}
	err = place.Run(c.Context, &hosts.Call{Args: joinArgs(c, flags, []string{name}), Stream: c.Bool("follow"),
		Stdout: c.App.Writer, Stderr: &hostDiagnostics{w: c.App.ErrWriter, host: place.Name()}})
	return passExit(c, place, err)
}

// diffOnHosts is diff across hosts. The patch itself (not --json, --stat or a template) comes
// back as the host wrote it, each host's after a line naming it when there are several, so
// that agt diff box2:fix | git apply works; the rest is the generic way.
func diffOnHosts(c *cli.Context, plan *hostPlan) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	patch := !c.Bool("stat") && (out.mode == modeTable || out.mode == modeJSON && !c.Bool("json") && c.String("format") != "json")
	if !patch {
		return runVerb(c, plan, hostVerb{names: -1})
	}
	flags, err := forwardFlags(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if isTerminal(w) {
		ts := &terminalSafe{w: w}
		defer ts.Flush()
		w = ts
	}
	outs := make([]placeOutput, len(plan.groups))
	for i, g := range plan.groups {
		if len(plan.groups) > 1 {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "# agt diff on %s\n", g.place.Name())
		}
		outs[i] = placeOutput{place: g.place, err: g.place.Run(c.Context, &hosts.Call{Args: joinArgs(c, flags, g.names),
			Stdout: w, Stderr: &hostDiagnostics{w: c.App.ErrWriter, host: g.place.Name()}})}
		if c.Context.Err() != nil {
			break
		}
	}
	return hostExit(c, outs)
}

// endOnEOF returns a context that ends when stdin reaches its end: agt's --end-on-eof, under
// which a command run over a link ends with the link.
func endOnEOF(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx
}
