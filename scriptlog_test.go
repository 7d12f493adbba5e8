package main

// Script commands that wait on and check what agents wrote: their files and event logs.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
)

// waitfile FILE: wait until FILE exists.
// waitfile FILE [REGEXP]: wait until FILE exists, and holds a line matching REGEXP if given.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitfile")
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [REGEXP]")
	}
	path := ts.MkAbs(args[0])
	if len(args) == 1 {
		poll(ts, path, func() bool { _, err := os.Stat(path); return err == nil })
		return
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	poll(ts, path+" to match "+args[1], func() bool {
		b, err := os.ReadFile(path)
		return err == nil && re.Match(b)
	})
}

func eventsPath(ts *testscript.TestScript, name string) string {
	return filepath.Join(ts.Getenv("AGT_RUN_DIR"), "agents", name, "events.ndjson")
}

// waitevent [-count=N] NAME TYPE [PATH=VALUE | PATH~REGEXP]: wait until NAME's log holds N
// (default 1) events of TYPE (whose gjson PATH has VALUE, or matches REGEXP).
func cmdWaitEvent(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitevent")
	want := 1
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		if err != nil || n < 1 {
			ts.Fatalf("waitevent: bad %s", args[0])
		}
		want, args = n, args[1:]
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitevent [-count=N] NAME TYPE [PATH=VALUE | PATH~REGEXP]")
	}
	path := eventsPath(ts, args[0])
	match := func(line string) bool {
		if gjson.Get(line, "type").String() != args[1] {
			return false
		}
		if len(args) == 3 {
			if k, expr, ok := strings.Cut(args[2], "~"); ok && !strings.Contains(k, "=") {
				re := regexp.MustCompile(expr)
				return re.MatchString(gjson.Get(line, k).String())
			}
			k, v, _ := strings.Cut(args[2], "=")
			return gjson.Get(line, k).String() == v
		}
		return true
	}
	poll(ts, fmt.Sprintf("%d %s events of %s", want, args[1], args[0]), func() bool {
		b, _ := os.ReadFile(path)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if match(line) {
				n++
			}
		}
		return n >= want
	})
}

// waitstate NAME STATE: wait until status.json of NAME says STATE.
func cmdWaitState(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitstate")
	if len(args) != 2 {
		ts.Fatalf("usage: waitstate NAME STATE")
	}
	path := filepath.Join(ts.Getenv("AGT_RUN_DIR"), "agents", args[0], "status.json")
	poll(ts, args[0]+" in state "+args[1], func() bool {
		b, _ := os.ReadFile(path)
		return gjson.GetBytes(b, "state").String() == args[1]
	})
}

// jsonl [-wait] FILE QUERY WANT: the gjson QUERY over the JSON or NDJSON in FILE (stdout,
// stderr or a file) gives WANT: the same text, or with WANT >N (<N) a number above (below) N.
// `..` queries address the lines: '..#(type=="exit").code'; '..#(type=="exit")#|#' counts
// them. With -wait it polls until the query gives WANT (FILE need not exist yet), and takes no
// negation.
func cmdJSONL(ts *testscript.TestScript, neg bool, args []string) {
	wait := len(args) > 0 && args[0] == "-wait"
	if wait {
		noNegation(ts, neg, "jsonl -wait")
		args = args[1:]
	}
	if len(args) != 3 {
		ts.Fatalf("usage: jsonl [-wait] FILE QUERY WANT")
	}
	file, query, want := args[0], args[1], args[2]
	holds, err := jsonWant(want)
	ts.Check(err)
	if wait {
		path := ts.MkAbs(file)
		poll(ts, fmt.Sprintf("%s in %s to give %s", query, file, want), func() bool {
			b, _ := os.ReadFile(path)
			return holds(gjson.GetBytes(b, query))
		})
		return
	}
	if got := gjson.Get(ts.ReadFile(file), query); holds(got) == neg {
		ts.Fatalf("jsonl %s %s: got %q, want %s%q", file, query, got.String(), map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// jsonWant returns the test of a jsonl WANT: the same text, or >N and <N on numbers.
func jsonWant(want string) (func(gjson.Result) bool, error) {
	if len(want) > 1 && (want[0] == '>' || want[0] == '<') {
		n, err := strconv.ParseFloat(want[1:], 64)
		if err != nil {
			return nil, fmt.Errorf("jsonl: bad number in %q", want)
		}
		above := want[0] == '>'
		return func(r gjson.Result) bool {
			return r.Type == gjson.Number && (r.Num > n) == above && r.Num != n
		}, nil
	}
	return func(r gjson.Result) bool { return r.String() == want }, nil
}

// validlog [-torn] FILE: the event log FILE ends in a newline, and its lines are valid JSON
// with a seq that strictly increases. With -torn, one torn event that a later writer closed
// (R21: the script killed the writer mid-event) is skipped and logged, as readers skip it; any
// other broken line fails.
func cmdValidLog(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "validlog")
	torn := 0 // torn events allowed: one, where the script killed a writer mid-event
	if len(args) == 2 && args[0] == "-torn" {
		torn, args = 1, args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: validlog [-torn] FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		ts.Fatalf("%s ends in a torn line", args[0])
	}
	var last int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if !gjson.ValidBytes(line) {
			if !bytes.HasPrefix(line, []byte(`{"v":1,`)) {
				ts.Fatalf("%s:%d: not valid JSON: %.80q", args[0], n, line)
			}
			if torn--; torn < 0 {
				ts.Fatalf("%s:%d: torn event of %d bytes, where no writer was killed", args[0], n, len(line))
			}
			ts.Logf("%s:%d: torn event of %d bytes, closed by a later writer", args[0], n, len(line))
			continue
		}
		seq := gjson.GetBytes(line, "seq").Int()
		if seq <= last {
			ts.Fatalf("%s:%d: seq %d after %d", args[0], n, seq, last)
		}
		last = seq
	}
	ts.Check(sc.Err())
}

// seqs FILE: the NDJSON events in FILE carry every seq from the first to the last exactly once,
// in order.
func cmdSeqs(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "seqs")
	if len(args) != 1 {
		ts.Fatalf("usage: seqs FILE")
	}
	var last int64
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		seq := gjson.Get(line, "seq").Int()
		if last == 0 && seq != 1 {
			ts.Fatalf("%s: the first seq is %d, not 1", args[0], seq)
		}
		if last != 0 && seq != last+1 {
			ts.Fatalf("%s: seq %d after %d", args[0], seq, last)
		}
		last = seq
		n++
	}
	ts.Logf("%d events, seq up to %d", n, last)
}

// spread FILE PATH MIN MAX DISTINCT: over the NDJSON lines of FILE, the numbers at gjson PATH
// all lie in [MIN, MAX] and take at least DISTINCT different values.
func cmdSpread(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "spread")
	if len(args) != 5 {
		ts.Fatalf("usage: spread FILE PATH MIN MAX DISTINCT")
	}
	lo, err1 := strconv.ParseFloat(args[2], 64)
	hi, err2 := strconv.ParseFloat(args[3], 64)
	distinct, err3 := strconv.Atoi(args[4])
	if err1 != nil || err2 != nil || err3 != nil {
		ts.Fatalf("spread: bad numbers")
	}
	seen := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		v := gjson.Get(line, args[1]).Float()
		if v < lo || v > hi {
			ts.Fatalf("%s %s = %v, out of [%v, %v]", args[0], args[1], v, lo, hi)
		}
		seen[v] = true
	}
	ts.Logf("%d distinct values of %s", len(seen), args[1])
	if len(seen) < distinct {
		ts.Fatalf("only %d distinct values of %s, want at least %d", len(seen), args[1], distinct)
	}
}

// filesize FILE MIN MAX: FILE holds between MIN and MAX bytes.
func cmdFileSize(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "filesize")
	if len(args) != 3 {
		ts.Fatalf("usage: filesize FILE MIN MAX")
	}
	lo, err1 := strconv.ParseInt(args[1], 10, 64)
	hi, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		ts.Fatalf("filesize: bad numbers")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Logf("%s holds %d bytes", args[0], fi.Size())
	if fi.Size() < lo || fi.Size() > hi {
		ts.Fatalf("%s holds %d bytes, not between %d and %d", args[0], fi.Size(), lo, hi)
	}
}
