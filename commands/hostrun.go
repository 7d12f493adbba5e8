package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/stream"
	"agt/termsafe"
)

// maxHostLine bounds one line from a host: agt caps what it writes far below this.
const maxHostLine = 16 << 20

// placeOutput is what one place answered a command.
type placeOutput struct {
	place hosts.Place
	lines [][]byte // its NDJSON objects, each with "host" added
	raw   []byte   // its stdout as it came, when it is not NDJSON
	err   error
}

// runEach runs a call at each place in parallel, each from call(i) for the i-th group, and
// returns what each answered, in order. jsonOut: stdout is NDJSON, collected as lines tagged
// with the host; else it is kept raw. Each place's stderr is passed on, each line naming it.
func runEach(ctx context.Context, errw io.Writer, groups []placeNames, jsonOut bool, call func(i int) *hosts.Call) []placeOutput {
	outs := make([]placeOutput, len(groups))
	var wg sync.WaitGroup
	var mu sync.Mutex // one place's diagnostics at a time
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[i]
			o.place = g.place
			cl := call(i)
			var raw bytes.Buffer
			lw := &lineWriter{fn: func(line []byte) error {
				if tagged := tagHost(line, g.place.Name()); tagged != nil {
					o.lines = append(o.lines, tagged)
				}
				return nil
			}}
			if jsonOut {
				cl.Stdout = lw
			} else {
				cl.Stdout = &raw
			}
			cl.Stderr = &hostDiagnostics{w: errw, host: g.place.Name(), mu: &mu, names: g.names}
			o.err = g.place.Run(ctx, cl)
			lw.Close()
			o.raw = raw.Bytes()
		}()
	}
	wg.Wait()
	return outs
}

// hostExit reports how the places ended: one line for each that failed to run the command
// (unreachable, or refused), and the exit status of the command as a whole: the first
// non-zero status of a place, 1 for a place that was not reached.
func hostExit(c *cli.Context, outs []placeOutput) error {
	code := 0
	for _, o := range outs {
		n, err := placeCode(c, o.place, o.err)
		if err != nil {
			return err
		}
		if code == 0 {
			code = n
		}
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}

// passExit ends a command with the status of the one it ran on a place: its own code, or 1
// with a line saying why the place did not run it.
func passExit(c *cli.Context, place hosts.Place, err error) error {
	n, err := placeCode(c, place, err)
	if err == nil && n != 0 {
		err = cli.Exit("", n)
	}
	return err
}

// placeCode is the status of a command that ran on a place (or did not): the place's agt's
// own, which said why; or 1, after a line saying why the place did not run it. It returns the
// context's error once the command was interrupted.
func placeCode(c *cli.Context, place hosts.Place, err error) (int, error) {
	var exit *hosts.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.Code, nil
	case c.Context.Err() != nil:
		return 0, c.Context.Err()
	}
	printHostError(c.App.ErrWriter, place.Name(), err)
	return 1, nil
}

// printHostError prints why a place could not run a command: ssh's reason for an unreachable
// host, each line naming the host.
func printHostError(w io.Writer, host string, err error) {
	var u *hosts.Unreachable
	msg := err.Error()
	if errors.As(err, &u) {
		msg = u.Reason
	}
	if !strings.Contains(msg, host) || errors.As(err, &u) {
		msg = host + ": " + msg
	}
	lines := strings.Split(msg, "\n") // a hint on a line of its own
	for i := range lines {
		lines[i] = termsafe.Text(lines[i])
	}
	PrintError(w, strings.Join(lines, "\n"))
}

// tagHost adds "host" to an NDJSON object from a host, first among its fields; nil for a line
// that is not one JSON object.
func tagHost(line []byte, host string) []byte {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || !gjson.ValidBytes(line) {
		return nil
	}
	line = termsafe.JSON(line) // DEL and C1, which JSON allows raw in a string, escaped
	out := make([]byte, 0, len(line)+len(host)+12)
	out = append(out, `{"host":`...)
	out = stream.AppendString(out, host)
	rest := bytes.TrimSpace(line[1:])
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// hostOf and nameOf read a tagged line's host and agent name ("agent" for events, "name" for
// the rest).
func hostOf(line []byte) string { return gjson.GetBytes(line, "host").String() }

func nameOf(line []byte) string {
	if r := gjson.GetBytes(line, "agent"); r.Exists() {
		return r.String()
	}
	return gjson.GetBytes(line, "name").String()
}

// qualified is how a place's agent is named where hosts are in play: HOST:NAME, escaped (the
// name came from the host).
func qualified(host, name string) string { return termsafe.Text(oneLine(host+":"+name, 200)) }

// lineWriter calls fn with each complete line written to it (without its newline); a line
// longer than maxHostLine is dropped. Close passes on a last line without a newline.
type lineWriter struct {
	fn   func(line []byte) error
	buf  []byte
	skip bool // inside a line too long to keep
	err  error
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && l.err == nil {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !l.skip {
				l.buf = append(l.buf, p...)
				if len(l.buf) > maxHostLine {
					l.buf, l.skip = l.buf[:0], true
				}
			}
			break
		}
		if !l.skip {
			l.buf = append(l.buf, p[:i]...)
			l.err = l.fn(l.buf)
		}
		l.buf, l.skip = l.buf[:0], false
		p = p[i+1:]
	}
	return n, l.err
}

func (l *lineWriter) Close() error {
	if len(l.buf) > 0 && !l.skip && l.err == nil {
		l.err = l.fn(l.buf)
	}
	l.buf = nil
	return l.err
}

// hostDiagnostics passes a host's stderr on, each line naming the host: agt's diagnostics as
// "agt: box2: stop x: …", the rest as "box2: allowed x Bash (id)". Escaped: a host's words
// never command the terminal.
type hostDiagnostics struct {
	w    io.Writer
	host string
	mu   *sync.Mutex
	buf  []byte
	// names are the agents the command was about: what it says of one of them names it
	// HOST:NAME ("allowed box1:fix Bash"), not after the host's name.
	names []string
}

func (h *hostDiagnostics) Write(p []byte) (int, error) {
	h.buf = append(h.buf, p...)
	for {
		i := bytes.IndexByte(h.buf, '\n')
		if i < 0 {
			if len(h.buf) > 64<<10 {
				h.buf = h.buf[:0]
			}
			return len(p), nil
		}
		line := termsafe.Text(strings.TrimSuffix(string(h.buf[:i]), "\r"))
		h.buf = h.buf[i+1:]
		if h.mu != nil {
			h.mu.Lock()
		}
		if rest, ok := strings.CutPrefix(line, "agt: "); ok {
			PrintError(h.w, h.host+": "+hostHint(rest, h.host))
		} else if text, named := hostLine(line, h.host, h.names); named {
			fmt.Fprintln(h.w, text) // what the command says of its agent: "allowed box1:x Bash"
		} else {
			fmt.Fprintf(h.w, "%s: %s\n", h.host, line)
		}
		if h.mu != nil {
			h.mu.Unlock()
		}
	}
}

// hostHint makes the commands a host's hint quotes ('agt ps x') run there when pasted here
// ('agt --host box2 ps x'): a bare NAME here is this machine's. A hint that names the host
// already (an engine's: 'agt stop swarm:x', 'agt ps --host swarm') is left as it is.
func hostHint(line, host string) string {
	if !strings.HasPrefix(line, "hint: ") || strings.Contains(line, host+":") || strings.Contains(line, "--host "+host) {
		return line
	}
	return strings.ReplaceAll(line, "'agt ", "'agt --host "+host+" ")
}

// hostColumn puts a HOST column before a table's others. The cells are the caller's to
// escape: what a host sends is judged as an agent's words are, whoever wrote it.
func hostColumn(header []string, rows [][]string, hostsOf []string) ([]string, [][]string) {
	header = append([]string{"HOST"}, header...)
	for i := range rows {
		rows[i] = append([]string{termsafe.Text(oneLine(hostsOf[i], 100))}, rows[i]...)
	}
	return header, rows
}

// cell is a table cell of a host's words: on one line, escaped.
func cell(s string) string { return termsafe.Text(oneLine(s, 200)) }

// joinArgs lists the arguments of a command for a host: its path (workspaces prune), the
// flags, the rest.
func joinArgs(c *cli.Context, parts ...[]string) []string {
	out := strings.Fields(commandPath(c))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// withHostField lets --format templates name .host.
func withHostField(c *cli.Context) {
	if f, ok := lookupFlag(c.Command, "format").(*formatFlagType); ok && !slices.Contains(f.fields, "host") {
		f.fields = append(f.fields, "host")
	}
}
