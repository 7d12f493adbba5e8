package commands

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"agt/stream"
)

func TestAlias(t *testing.T) {
	for key, want := range map[string]string{
		"name": "Name", "exit_code": "ExitCode", "cost_usd": "CostUSD", "duration_ms": "DurationMS",
		"session_id": "SessionID", "pid": "PID", "ok": "OK", "ts": "TS", "v": "V", "tool_use": "ToolUse",
	} {
		if got := alias(key); got != want {
			t.Errorf("alias(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestEventFieldAliases: the aliases of the event's JSON fields are its Go field names, the
// names templates used before they took JSON names, so old templates keep working.
func TestEventFieldAliases(t *testing.T) {
	typ := reflect.TypeOf(stream.Event{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if got := alias(name); got != f.Name {
			t.Errorf("alias(%q) = %q, want the Go name %q", name, got, f.Name)
		}
	}
}

func TestJSONFields(t *testing.T) {
	got := jsonFields(reflect.TypeOf(workspaceRow{}))
	want := []string{"agent", "type", "path", "repo", "name", "base", "branch", "change", "from", "seeded", "orphan", "state", "missing", "dirty", "changed", "merged", "ahead", "behind", "into"}
	if !slices.Equal(got, want) {
		t.Errorf("jsonFields(workspaceRow) = %v, want %v", got, want)
	}
}

func TestParseTemplate(t *testing.T) {
	fields := []string{"name", "exit_code", "workspace"}
	for _, tc := range []struct {
		text, err string
	}{
		{"{{.name}} {{.exit_code}}", ""},
		{"{{.Name}} {{.ExitCode}}", ""},
		{"{{.workspace.path}}", ""},                                     // below the top, anything
		{"{{range .workspace}}{{.whatever}}{{end}}", ""},                // another dot
		{"{{with .workspace}}{{.x}}{{else}}{{.name}}{{end}}", ""},       // with: the else keeps the dot
		{"{{if .name}}{{.nope}}{{end}}", "no field .nope"},              // if keeps the dot
		{"{{$.nope}}", "no field .nope"},                                // $ is the top
		{"{{json .Nope}}", "no field .Nope"},                            // in a call
		{"{{.exitcode}}", "no field .exitcode; the fields are .name, "}, // lists them
		{"{{.name", "unclosed action"},
	} {
		_, err := parseTemplate(tc.text, fields)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("parseTemplate(%q): %v", tc.text, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseTemplate(%q) = %v, want an error with %q", tc.text, err, tc.err)
		}
	}
}

func TestTemplateData(t *testing.T) {
	o := &output{fields: []string{"name", "exit_code", "doing", "delay_ms", "cost_usd"}}
	o.tmpl, _ = parseTemplate(`{{.name}}|{{.ExitCode}}|{{.doing}}|{{if ge .delay_ms 800}}late{{end}}|{{.cost_usd}}|{{.workspace.Path}}`, nil)
	var b strings.Builder
	o.w, o.mode = &b, modeTemplate
	raw := []byte(`{"name":"a","exit_code":null,"delay_ms":1043,"cost_usd":0.5,"workspace":{"path":"/w"}}`)
	if err := o.item(nil, raw); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "a|||late|0.5|/w\n"; got != want {
		t.Errorf("template gave %q, want %q", got, want)
	}
}

func TestRoundCost(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"result","cost_usd":0.008459999999999999,"usage":{}}`, `{"type":"result","cost_usd":0.00846,"usage":{}}`},
		{`{"type":"result","cost_usd":0.0421}`, `{"type":"result","cost_usd":0.0421}`},
		{`{"type":"result","cost_usd":null}`, `{"type":"result","cost_usd":null}`},
		{`{"type":"result","cost_usd":1e-9}`, `{"type":"result","cost_usd":0}`},
		{`{"type":"output","line":"cost_usd"}`, `{"type":"output","line":"cost_usd"}`},
	} {
		if got := string(roundCost([]byte(tc.in))); got != tc.want {
			t.Errorf("roundCost(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestDurationValue(t *testing.T) {
	for in, want := range map[string]string{"5": "5s", "1.5": "1.5s", "0": "0s", "90s": "1m30s", "1m": "1m0s"} {
		var d durationValue
		if err := d.Set(in); err != nil || d.String() != want {
			t.Errorf("Set(%q) = %s, %v; want %s", in, d.String(), err, want)
		}
	}
	var d durationValue
	if err := d.Set("soon"); err == nil {
		t.Error(`Set("soon") passed`)
	}
}

// TestOutputEscapes: every way output prints an item shows what an agent wrote escaped, in
// table cells, human lines, templates and JSON alike (R35).
func TestOutputEscapes(t *testing.T) {
	hostile := "x\x1b]52;c;aGk=\x07\u009b2J\ry"
	item := map[string]string{"reason": hostile}
	var b strings.Builder
	for _, o := range []*output{
		{w: &b, mode: modeTable},
		{w: &b, mode: modeJSON},
	} {
		if err := o.table([]string{"REASON"}, [][]string{{hostile}}); err != nil {
			t.Fatal(err)
		}
		if err := o.line(item, hostile); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := parseTemplate("{{.reason}}", []string{"reason"})
	if err != nil {
		t.Fatal(err)
	}
	o := &output{w: &b, mode: modeTemplate, tmpl: tmpl, fields: []string{"reason"}}
	if err := o.item(item, nil); err != nil {
		t.Fatal(err)
	}
	if err := (&output{w: &b, mode: modeJSON}).item(nil, []byte(`{"reason":"a`+"\u009b"+`b"}`)); err != nil {
		t.Fatal(err)
	}
	for _, r := range b.String() {
		if r == 0x1b || r == '\r' || r == 0x07 || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("output keeps %U:\n%q", r, b.String())
		}
	}
	if !strings.Contains(b.String(), `x\x1b]52;c;aGk=\x07\u009b2J\ry`) {
		t.Errorf("the text is not shown escaped:\n%s", b.String())
	}
}

// TestTableColorAligned: a coloured column lines up under its header, as an uncoloured one
// does; the colour takes no columns (ps on a terminal had STATE nine columns too wide).
func TestTableColorAligned(t *testing.T) {
	var b strings.Builder
	o := &output{w: &b, mode: modeTable}
	err := o.table([]string{"NAME", "STATE", "DIR"}, [][]string{
		{"a", stateCell("running", true), "/x"},
		{"longer-name", stateCell("failed", true), "/y"},
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := strings.NewReplacer(sgrReset, "", sgrGreen, "", sgrRed, "").Replace(b.String())
	want := "NAME         STATE    DIR\n" +
		"a            running  /x\n" +
		"longer-name  failed   /y\n"
	if plain != want {
		t.Errorf("table, colours taken out:\n%s\nwant:\n%s", plain, want)
	}
}
