package commands

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// hiddenStatus are the fields of status.json that no view shows: the supervisor's own.
var hiddenStatus = []string{"v", "instance", "resumable", "session_total", "last_seq", "dropped"}

// TestStatusFieldsAgree holds ps, inspect and status.json together: every field of status.json
// is a row of statusFields (or hidden on purpose), under its status.json name, with the value
// status.json has, and left out when empty exactly where status.json leaves it out. A field
// added to one and not the others fails here.
func TestStatusFieldsAgree(t *testing.T) {
	var full state.Status
	fill(reflect.ValueOf(&full).Elem())
	for _, f := range statusFields {
		if !gjson.GetBytes(mustMarshal(t, &full), f.key).Exists() {
			t.Errorf("row %q is no field of status.json", f.key)
		}
	}
	tags := reflect.TypeOf(state.Status{})
	for i := 0; i < tags.NumField(); i++ {
		key, _, _ := strings.Cut(tags.Field(i).Tag.Get("json"), ",")
		if key != "name" && !slices.Contains(hiddenStatus, key) && !slices.ContainsFunc(statusFields, func(f statusField) bool { return f.key == key }) {
			t.Errorf("status.json's %q is no row of statusFields: show it in a view, or hide it (hiddenStatus)", key)
		}
	}
	for _, st := range []*state.Status{&full, {Name: "n"}} {
		file := gjson.ParseBytes(mustMarshal(t, st))
		for _, view := range []int{inPs, inInspect} {
			shown := append(appendStatus(nil, st.Name, st, view), '}')
			if !json.Valid(shown) {
				t.Fatalf("view %d wrote invalid JSON: %s", view, shown)
			}
			got := gjson.ParseBytes(shown)
			for _, key := range viewFields(view) {
				v, w := got.Get(key), file.Get(key)
				if v.Exists() != w.Exists() {
					t.Errorf("view %d shows %q: %v, status.json: %v", view, key, v.Exists(), w.Exists())
				}
				if v.Exists() && !sameJSON(v.Raw, w.Raw) {
					t.Errorf("view %d: %q is %s, status.json has %s", view, key, v.Raw, w.Raw)
				}
			}
		}
	}
}

// TestStatusViewJSON: the hand-written encoder writes what encoding/json would, hostile strings
// and odd costs included (byte for byte where encoding/json escapes no HTML character).
func TestStatusViewJSON(t *testing.T) {
	code := -1
	sts := []*state.Status{{}, {
		Name: "a", Kind: "claude", State: "waiting", Reason: "input \"quoted\"\n\u2028<&>\xff", PID: 42,
		Started:  time.Date(2026, 11, 22, 10, 0, 0, 120000000, time.UTC),
		Updated:  time.Date(2026, 11, 22, 10, 0, 1, 0, time.FixedZone("", -5*3600)),
		Restarts: 3, ExitCode: &code, Dir: "/tmp/ü", SessionID: "s", Model: "m", Turns: 4,
		Usage:     state.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 1 << 50},
		Workspace: json.RawMessage("{\n  \"type\": \"git\",\n  \"path\": \"/w x\"\n}"),
		History:   []state.Exit{{Code: &code, At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}}
	for _, c := range []float64{0, 1, 0.1234, 1e-7, 2.5e-9, 1e21, 123456789.125, math.SmallestNonzeroFloat64} {
		c := stream.RoundUSD(c) // as ps rounds what it reads, and AppendCost what it writes
		sts = append(sts, &state.Status{Name: "c", CostUSD: &c, MaxCost: c})
	}
	for _, st := range sts {
		file := mustMarshal(t, st)
		for _, view := range []int{inPs, inInspect} {
			got := append(appendStatus(nil, st.Name, st, view), '}')
			// encoding/json's view: status.json's fields, those the view shows, in its order.
			var m map[string]json.RawMessage
			json.Unmarshal(file, &m)
			var want bytes.Buffer
			want.WriteByte('{')
			for i, key := range viewFields(view) {
				if _, ok := m[key]; !ok {
					continue
				}
				if i > 0 {
					want.WriteByte(',')
				}
				k, _ := json.Marshal(key)
				want.Write(append(k, ':'))
				json.Compact(&want, m[key])
			}
			want.WriteByte('}')
			if !sameJSON(string(got), want.String()) {
				t.Errorf("view %d\n got %s\nwant %s", view, got, want.String())
			}
			if !strings.ContainsAny(st.Reason, "<&>\xff\u2028") && string(got) != want.String() {
				t.Errorf("view %d, byte for byte\n got %s\nwant %s", view, got, want.String())
			}
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
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

// TestPsWaitingFor: what an agent waits for, which ps adds to its status fields, is written as
// encoding/json would.
func TestPsWaitingFor(t *testing.T) {
	st := &state.Status{Name: "w", State: stream.Waiting}
	for _, w := range []*spawn.Waiting{nil, {Reason: "input"},
		{Reason: "permission", ID: "r<1>", Tool: "Bash", Input: json.RawMessage(`{ "command": "ls" }`), Pending: 2}} {
		got := gjson.GetBytes((&psRow{st.Name, st, w}).appendJSON(nil), "waiting_for").Raw
		if want := string(mustMarshal(t, w)); !sameJSON(got, want) {
			t.Errorf("waiting_for %s, want %s", got, want)
		}
	}
}

// BenchmarkPsRow: a ps row written from the table, against encoding/json writing the same
// fields (reflection): the table is what ps runs in a shell prompt.
func BenchmarkPsRow(b *testing.B) {
	var st state.Status
	fill(reflect.ValueOf(&st).Elem())
	st.History, st.Workspace = nil, json.RawMessage(`{"type":"git","path":"/w"}`)
	row := &psRow{"name", &st, &spawn.Waiting{Reason: "input"}}
	b.Run("table", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = row.appendJSON(buf[:0])
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(&st)
		}
	})
}
