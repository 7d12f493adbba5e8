package engine

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"v":1,"agent":"fix","seq":3,"type":"output","line":"hi"}`, true},
		{`  {"agent":"fix","seq":1,"type":"spawned"}  `, true},
		{`{"agent":"other","seq":3,"type":"output"}`, false}, // another agent's: forged
		{`{"agent":"fix","seq":0,"type":"output"}`, false},
		{`{"agent":"fix","seq":"3","type":"output"}`, false},
		{`{"agent":"fix","seq":3}`, false},
		{`{"agent":"fix","seq":3,"type":"output"`, false},
		{`agt: something went wrong`, false},
		{``, false},
	} {
		ev, ok := parseEvent("fix", []byte(tc.line))
		if ok != tc.ok {
			t.Errorf("parseEvent(%q) = %v, want %v", tc.line, ok, tc.ok)
		}
		if ok && (ev.seq < 1 || ev.typ == "") {
			t.Errorf("parseEvent(%q) = %+v", tc.line, ev)
		}
	}
}

func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", maxEventLine+10)
	in := "one\n" + long + "\ntwo\nthree"
	var got []string
	eachLine(strings.NewReader(in), func(l []byte) bool {
		got = append(got, string(l))
		return true
	})
	if strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("lines = %.80q", got)
	}
	got = nil
	eachLine(strings.NewReader("a\nb\nc\n"), func(l []byte) bool {
		got = append(got, string(l))
		return len(got) < 2
	})
	if len(got) != 2 {
		t.Fatalf("eachLine went on after false: %q", got)
	}
}

func TestTailFilter(t *testing.T) {
	c, _ := parseCall([]string{"tail", "--after=fix=3", "--after=7", "--type=output,exit", "--lines=2"})
	f, err := parseTailFilter(c)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := f.afterOf("fix"); !ok || n != 3 {
		t.Errorf("after fix = %d %v", n, ok)
	}
	if n, ok := f.afterOf("other"); !ok || n != 7 {
		t.Errorf("after other = %d %v", n, ok)
	}
	if !f.passes(event{typ: "exit"}) || f.passes(event{typ: "state"}) || f.last != 2 {
		t.Errorf("filter = %+v", f)
	}
	for _, bad := range []string{"--after=x=y", "--lines=-1", "--lines=many"} {
		c, _ := parseCall([]string{"tail", bad})
		if _, err := parseTailFilter(c); err == nil {
			t.Errorf("%s passed", bad)
		}
	}
}

// FuzzParseEvent: whatever a job prints, an event passed is a JSON object of the job's own
// agent with a seq and a type, on one line.
func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"v":1,"agent":"fix","seq":3,"type":"output","line":"hi"}`))
	f.Add([]byte(`{"agent":"fix","seq":1e3,"type":"x"}`))
	f.Add([]byte("{\"agent\":\"fix\",\"seq\":2,\"type\":\"a\\nb\"}\n{"))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, ok := parseEvent("fix", line)
		if !ok {
			return
		}
		if ev.seq < 1 || ev.typ == "" || bytes.IndexByte(ev.line, '\n') >= 0 || ev.line[0] != '{' {
			t.Fatalf("passed %q as %+v", line, ev)
		}
	})
}
