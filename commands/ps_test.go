package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"agt/spawn"
	"agt/state"
	"agt/stream"

	"github.com/tidwall/gjson"
)

// TestPsRowJSON checks the hand-written encoder of ps rows against encoding/json.
func TestPsRowJSON(t *testing.T) {
	code := -1
	costs := []float64{0, 1, 0.1234, 1e-7, 2.5e-9, 1e21, 123456789.125, math.SmallestNonzeroFloat64}
	rows := []psRow{{}, {
		Name: "a", Kind: "claude", State: "waiting", Reason: "input \"quoted\"\n\u2028<&>\xff", PID: 42,
		Started:  time.Date(2026, 11, 22, 10, 0, 0, 120000000, time.UTC),
		Updated:  time.Date(2026, 11, 22, 10, 0, 1, 0, time.FixedZone("", -5*3600)),
		Restarts: 3, ExitCode: &code, Dir: "/tmp/ü", SessionID: "s", Model: "m", Turns: 4,
		Usage:     state.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 1 << 50},
		Workspace: json.RawMessage("{\n  \"type\": \"git\",\n  \"path\": \"/w x\"\n}"),
	}}
	for _, c := range costs {
		c := stream.RoundUSD(c) // as ps rounds what it reads, and AppendCost what it writes
		rows = append(rows, psRow{Name: "c", CostUSD: &c})
	}
	for _, r := range rows {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.appendJSON(nil)
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("appendJSON wrote invalid JSON %s: %v", got, err)
		}
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(g)
		if string(wb) != string(gb) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
		// Byte for byte, where no HTML character or invalid UTF-8 is escaped differently.
		if r.Reason == "" && string(got) != string(want) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	}
}

// TestFastPs checks that the everyday forms of ps print what the CLI library's ps prints,
// and that everything else is left to the library.
func TestFastPs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "run")
	d, err := state.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	code := 3
	for name, st := range map[string]state.Status{
		"done":  {State: "exited", ExitCode: &code, Dir: "/w"},
		"gone":  {State: "running", PID: 1, Dir: "/w"}, // no supervisor holds its lock: lost
		"crash": {State: "failed", Reason: "gave up after 5", Kind: "claude"},
	} {
		a, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		st := st
		l, err := a.Lock() // as its supervisor would, then gone
		if err != nil {
			t.Fatal(err)
		}
		err = l.WriteStatus(&st)
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Create("fresh"); err != nil { // no status yet
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "AGT_RUN_DIR" {
			return root
		}
		return ""
	}
	for _, args := range [][]string{
		{"ps"}, {"ps", "-q"}, {"ps", "--json"}, {"ps", "--quiet", "--json"},
		{"ps", "--state", "lost"}, {"ps", "--state=exited,failed"}, {"ps", "--state", "unknown", "-q"},
		{"ps", "done", "crash"}, {"ps", "-q", "gone"}, {"--run-dir", root, "ps"}, {"--run-dir=" + root, "ps", "-q"},
		{"ps", "nosuch"},
	} {
		argv := append([]string{"agt"}, args...)
		var fast bytes.Buffer
		handled, ferr := fastPs(argv, &fast, env)
		if !handled {
			t.Errorf("%q: not handled", args)
			continue
		}
		t.Setenv("AGT_RUN_DIR", root)
		var lib bytes.Buffer
		app := New("test")
		app.Writer, app.ErrWriter = &lib, io.Discard
		lerr := app.RunContext(context.Background(), argv)
		if fast.String() != lib.String() || fmt.Sprint(ferr) != fmt.Sprint(lerr) {
			t.Errorf("%q:\nfast %q, %v\nlib  %q, %v", args, fast.String(), ferr, lib.String(), lerr)
		}
	}
	for _, args := range [][]string{
		{"ps", "--format", "{{.Name}}"}, {"ps", "--help"}, {"ps", "-h"}, {"ps", "--state", "bogus"},
		{"ps", "--state"}, {"ps", "done", "-q"}, {"ps", "Bad/Name"}, {"ps", "--", "done"}, {"stop", "done"},
		{"--run-dir"}, {"--version"}, {},
	} {
		var out bytes.Buffer
		if handled, _ := fastPs(append([]string{"agt"}, args...), &out, env); handled || out.Len() > 0 {
			t.Errorf("%q: handled by the fast path", args)
		}
	}
	t.Run("AGT_PS_FORMAT", func(t *testing.T) {
		env := func(k string) string { return map[string]string{"AGT_RUN_DIR": root, "AGT_PS_FORMAT": "{{.name}}"}[k] }
		if handled, _ := fastPs([]string{"agt", "ps"}, io.Discard, env); handled {
			t.Error("AGT_PS_FORMAT handled by the fast path")
		}
	})
}

// TestFastSuperviseArgs: the argv spawn writes takes the fast path, read right; nothing else
// does.
func TestFastSuperviseArgs(t *testing.T) {
	want := superviseArgs{root: "/r", name: "n", mode: spawn.StartResume, readyFD: 3, goFD: 4}
	if got, ok := parseSuperviseArgs(spawn.SupervisorArgs("/r", spawn.StartResume, "n")); !ok || got != want {
		t.Errorf("spawn's own argv: %+v, %v; want %+v", got, ok, want)
	}
	for _, args := range [][]string{
		{"agt", "supervise", "x"},
		{"agt", "--run-dir", "/r", "supervise", "--ready-fd", "3", "--go-fd", "4", "--mode", ""},
		{"agt", "--run-dir", "/r", "supervise", "--ready-fd", "x", "--go-fd", "4", "--mode", "", "n"},
		{"agt", "--run-dir", "/r", "supervise", "--go-fd", "3", "--ready-fd", "4", "--mode", "", "n"},
		{"agt", "--run-dir", "/r", "ps", "--ready-fd", "3", "--go-fd", "4", "--mode", "", "n"},
	} {
		if handled, _ := FastSupervise(args); handled {
			t.Errorf("%q: handled by the fast path", args)
		}
	}
}

// TestPsRowFields fills every field of a status, and checks that each field of psRow is
// copied from it (rowOf) and written by appendJSON: adding a ps field to one place and not
// the others fails here.
func TestPsRowFields(t *testing.T) {
	var st state.Status
	fill(reflect.ValueOf(&st).Elem())
	row := rowOf("n", &st)
	row.WaitingFor = &spawn.Waiting{Reason: "x"} // from the inbox, not the status
	rv := reflect.ValueOf(row)
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		if rv.Field(i).IsZero() {
			t.Errorf("psRow.%s is not copied from the status by rowOf", f.Name)
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !gjson.GetBytes(row.appendJSON(nil), key).Exists() {
			t.Errorf("psRow.%s (%q) is not written by appendJSON", f.Name, key)
		}
	}
}

// fill sets every field of v to a value that is not zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			v.SetBytes([]byte(`{"type":"none"}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	}
}
