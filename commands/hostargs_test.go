package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"
)

// TestForwardFlags sets every flag of every command that runs on hosts, has forwardFlags
// write them back, and parses what it wrote with the same command: every value must come
// through as it was given.
func TestForwardFlags(t *testing.T) {
	t.Setenv("AGT_HOST", "")
	for path := range hostVerbs {
		app := New("test")
		cmd := commandAt(app.Commands, strings.Fields(path))
		if cmd == nil {
			t.Errorf("hostVerbs names %q, which is no command", path)
			continue
		}
		var args []string
		for _, f := range cmd.Flags {
			name := f.Names()[0]
			if name == "help" || name == "host" {
				continue
			}
			switch f.(type) {
			case *cli.BoolFlag:
				args = append(args, "--"+name)
			case *cli.IntFlag:
				args = append(args, "--"+name+"=3")
			case *cli.Float64Flag:
				args = append(args, "--"+name+"=1.25")
			case *cli.DurationFlag, *cli.GenericFlag:
				args = append(args, "--"+name+"=90s")
			case *cli.StringSliceFlag:
				args = append(args, "--"+name+"=a,b it's", "--"+name+"=c")
			default:
				args = append(args, "--"+name+"=v a'l -x")
			}
		}
		first := values(t, path, cmd, args, true)
		app2 := New("test")
		cmd2 := commandAt(app2.Commands, strings.Fields(path))
		second := values(t, path, cmd2, first.forwarded, false)
		if !reflect.DeepEqual(first.values, second.values) {
			t.Errorf("%s: given %q\nforwarded %q\nparsed   %v\nreparsed %v", path, args, first.forwarded, first.values, second.values)
		}
	}
}

type parsed struct {
	values    map[string]string
	forwarded []string
}

// values runs cmd (its action replaced) with args and returns the value of each flag set, and
// what forwardFlags writes back.
func values(t *testing.T, path string, cmd *cli.Command, args []string, forward bool) parsed {
	t.Helper()
	var p parsed
	cmd.Action = func(c *cli.Context) error {
		p.values = map[string]string{}
		for _, f := range cmd.Flags {
			n := f.Names()[0]
			switch {
			case !c.IsSet(n):
			case isGeneric(f):
				p.values[n] = fmt.Sprint(c.Generic(n))
			default:
				p.values[n] = fmt.Sprint(c.Value(n))
			}
		}
		if forward {
			var err error
			p.forwarded, err = forwardFlags(c)
			return err
		}
		return nil
	}
	app := &cli.App{Name: "agt", Commands: []*cli.Command{rootOf(cmd, path)}, ExitErrHandler: func(*cli.Context, error) {}, DisableSliceFlagSeparator: true}
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	if err := app.RunContext(context.Background(), append(append([]string{"agt"}, strings.Fields(path)...), args...)); err != nil {
		t.Fatalf("%s %q: %v\n%s", path, args, err, out.String())
	}
	return p
}

// rootOf is the top command that holds cmd (workspaces for workspaces prune).
func rootOf(cmd *cli.Command, path string) *cli.Command {
	words := strings.Fields(path)
	if len(words) == 1 {
		return cmd
	}
	return &cli.Command{Name: words[0], Subcommands: []*cli.Command{cmd}}
}

// commandAt is the command at path (workspaces prune) among cmds.
func commandAt(cmds []*cli.Command, path []string) *cli.Command {
	var c *cli.Command
	for _, name := range path {
		if c = findCommand(cmds, name); c == nil {
			return nil
		}
		cmds = c.Subcommands
	}
	return c
}

func TestTagHost(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:          `{"host":"h\"1","a":1}`,
		` {"a":1} `:        `{"host":"h\"1","a":1}`,
		`{}`:               `{"host":"h\"1"}`,
		`{ }`:              `{"host":"h\"1"}`,
		`[1]`:              ``,
		`{"a":`:            ``,
		`not json`:         ``,
		"{\"a\":\"\x1b\"}": ``,
	} {
		got := string(tagHost([]byte(in), `h"1`))
		if got != want {
			t.Errorf("tagHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzTagHost(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{}`, `{"host":"x"}`, `[]`, `{"a":[{"b":"\u001b"}]}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s), "box2")
	}
	f.Fuzz(func(t *testing.T, line []byte, host string) {
		out := tagHost(line, host)
		if out == nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("tagHost(%q, %q) = %q: not JSON", line, host, out)
		}
		if got := gjson.GetBytes(out, "host").String(); utf8.ValidString(host) && got != host {
			t.Fatalf("tagHost(%q, %q): host %q", line, host, got)
		}
	})
}

func TestLineWriter(t *testing.T) {
	var got []string
	lw := &lineWriter{fn: func(line []byte) error { got = append(got, string(line)); return nil }}
	long := strings.Repeat("x", maxHostLine+1)
	for _, chunk := range []string{"a", "b\nc\n", long[:10], long[10:], "\nd\n", "tail"} {
		lw.Write([]byte(chunk))
	}
	lw.Close()
	if want := []string{"ab", "c", "d", "tail"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q (the long one dropped)", got, want)
	}
}

// isGeneric reports whether f's value is read with c.Generic: a GenericFlag, or one of agt's
// own kinds (spawn's --sandbox).
func isGeneric(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag, *cli.StringFlag, *formatFlagType, *cli.IntFlag, *cli.Float64Flag, *cli.DurationFlag, *cli.StringSliceFlag:
		return false
	}
	return true
}

// FuzzHostDiagnostics: whatever a host writes to stderr, each line reaches ours naming the
// host, with no control character but the newline that ends it.
func FuzzHostDiagnostics(f *testing.F) {
	f.Add([]byte("agt: stop x: gone\nallowed x Bash (id)\r\n"), 3)
	f.Add([]byte("\x1b]52;c;aGk=\x07\x9b2J\xc2\x9b6n\n"), 1)
	f.Fuzz(func(t *testing.T, text []byte, chunk int) {
		var out bytes.Buffer
		d := &hostDiagnostics{w: &out, host: "box2"}
		if chunk < 1 {
			chunk = 1
		}
		for len(text) > 0 {
			n := min(chunk, len(text))
			d.Write(text[:n])
			text = text[n:]
		}
		for _, line := range strings.SplitAfter(out.String(), "\n") {
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "agt: box2: ") && !strings.HasPrefix(line, "box2: ") {
				t.Fatalf("line %q does not name the host", line)
			}
			for _, r := range strings.TrimSuffix(line, "\n") {
				if r < ' ' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("line %q holds %U", line, r)
				}
			}
		}
	})
}

// A host's hint runs there when pasted here; one that names the host already is left alone,
// never 'agt --host swarm ps --host swarm'.
func TestHostHint(t *testing.T) {
	for _, tc := range []struct{ line, host, want string }{
		{"hint: 'agt ps x' lists them", "box2", "hint: 'agt --host box2 ps x' lists them"},
		{"hint: 'agt stop swarm:x' first", "swarm", "hint: 'agt stop swarm:x' first"},
		{"hint: 'agt ps --host swarm' lists them", "swarm", "hint: 'agt ps --host swarm' lists them"},
		{"no agent 'agt ps'", "box2", "no agent 'agt ps'"},
	} {
		if got := hostHint(tc.line, tc.host); got != tc.want {
			t.Errorf("hostHint(%q, %q) = %q, want %q", tc.line, tc.host, got, tc.want)
		}
	}
}
