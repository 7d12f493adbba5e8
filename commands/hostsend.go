package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/termsafe"
)

// sendWaitOnPlace is send --wait to an agent on a host. The host's agt first says where the
// agent's log stood when it took the message (send --seqs); if the link drops after that,
// the turn is followed again from the last event printed (tail --follow --after), with
// backoff while the host cannot be reached, until its result or its question: a dropped
// connection costs the answer of the turn only if the host never comes back. The message is
// never sent twice.
func sendWaitOnPlace(c *cli.Context, fl *hostFollower, place hosts.Place, name string, call *hosts.Call) error {
	host, q := place.Name(), qualified(place.Name(), name)
	turn := &firstTurn{}
	taken := false
	lw := &lineWriter{fn: func(line []byte) error {
		t := tagHost(line, host)
		switch {
		case t == nil:
			return nil
		case isSeqMark(t):
			taken = true
		default:
			turn.ends(t)
		}
		return fl.print(t)
	}}
	call.Stdout = lw
	err := place.Run(c.Context, call)
	lw.Close()
	var u *hosts.Unreachable
	switch {
	case !hosts.IsUnreachable(err) || c.Context.Err() != nil:
		return passExit(c, place, err)
	case turn.done:
		return turn.exit(q) // the answer came before the link went
	case !taken:
		printHostError(c.App.ErrWriter, host, err)
		return cli.Exit(fmt.Sprintf("the link to %s dropped before it said whether it took the message\nhint: 'agt tail %s' shows whether it did", termsafe.Text(host), q), 1)
	}
	u = err.(*hosts.Unreachable)
	PrintError(c.App.ErrWriter, termsafe.Text(fmt.Sprintf("%s: %s; following the turn of %s again", host, u.Reason, q)))
	fl.until = turn.ends
	if err := fl.follow(c.Context, place, []string{name}); err != nil {
		return passExit(c, place, err)
	}
	if !turn.done {
		return cli.Exit(fmt.Sprintf("%s ended before its turn did\nhint: 'agt tail %s' shows how", q, q), 1)
	}
	return turn.exit(q)
}
