package config

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzPolicyBash checks the Bash matcher against what a shell would run. A line the rules allow
// is run in an interpreter that executes nothing (mvdan.cc/sh's interp, every program a no-op,
// every file empty), which expands each command as bash would: $(echo rm) becomes rm. Each
// command it would run, written out literally, must be allowed on its own too; a line whose
// expansion reaches rm, or anything the rules would not allow, was allowed wrongly.
func FuzzPolicyBash(f *testing.F) {
	for _, b := range bypasses {
		f.Add(b.command)
	}
	for _, c := range []string{"ls -la", "x=rm; echo $x", "echo $(echo rm)", "a=(rm x); echo ${a[@]}",
		"f() { echo rm; }; f", "for c in rm; do echo $c; done", "IFS=,; x=rm,x; echo $x",
		"printf -v x rm; echo $x", "read x <<< rm; echo $x", "set -- rm x; echo \"$@\""} {
		f.Add(c)
	}
	p := Policy{Allow: []string{"Bash"}, Deny: []string{"Bash(rm:*)"}, Dir: os.TempDir()}
	f.Fuzz(func(t *testing.T, command string) {
		got, _ := p.Decide("Bash", bashInput(command))
		if got != "allow" || len(command) > 512 {
			return // denied or asked: rm cannot run by this line without a person
		}
		for _, argv := range interpret(t, command) {
			literal := quoteArgv(argv)
			if d, rule := p.Decide("Bash", bashInput(literal)); d != "allow" {
				t.Fatalf("%q was allowed, but it runs %q, which is %q (%s)", command, literal, d, rule)
			}
		}
	})
}

// interpret runs command in an interpreter that executes no program and touches no file, and
// returns every command it would have run, expanded.
func interpret(t *testing.T, command string) [][]string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil
	}
	skip := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.ProcSubst); ok {
			skip = true // the interpreter makes FIFOs for these
		}
		return !skip
	})
	if skip {
		return nil
	}
	var ran [][]string
	r, err := interp.New(
		interp.Env(expand.ListEnviron("PATH=/usr/bin:/bin", "HOME=/nonexistent")),
		interp.Dir("/"),
		interp.StdIO(strings.NewReader(""), io.Discard, io.Discard),
		interp.CallHandler(func(_ context.Context, args []string) ([]string, error) {
			ran = append(ran, append([]string(nil), args...))
			return args, nil
		}),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(context.Context, []string) error { return nil }
		}),
		interp.OpenHandler(func(context.Context, string, int, os.FileMode) (io.ReadWriteCloser, error) {
			return nullFile{}, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r.Run(ctx, f)
	return ran
}

// quoteArgv writes argv as one shell command that runs exactly it.
func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = "$'" + strings.ReplaceAll(a, "'", `\'`) + "'"
		}
		out[i] = q
	}
	return strings.Join(out, " ")
}

// nullFile reads as empty and takes every write.
type nullFile struct{}

func (nullFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nullFile) Write(b []byte) (int, error) { return len(b), nil }
func (nullFile) Close() error                { return nil }
