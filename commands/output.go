package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/stream"
	"agt/termsafe"
)

// Output modes, in the order they are chosen: --json, --format, a terminal, else NDJSON.
const (
	modeJSON = iota
	modeTemplate
	modeTable // a table, human lines, or for events the transcript
)

// output writes a command's data: NDJSON, a Go template per item, or a table.
type output struct {
	w    io.Writer
	mode int
	tmpl *template.Template
	// fields are the JSON fields a template may name (their aliases too), for the command's items.
	fields []string
	// color: the human view may use colour (a terminal, and NO_COLOR unset or empty).
	color bool
	// view renders events for people in table mode (tail, spawn --follow and --wait).
	view *transcript
	// status is the wait's status line on stderr, hidden before anything is printed.
	status *liveStatus
}

// outputFor picks the format for c: --json → NDJSON; --format → template (or "table", "json");
// stdout a terminal → table; else NDJSON. A template is checked against the fields the
// command's --format flag lists, so a misspelt field is a usage error before anything runs.
func outputFor(c *cli.Context) (*output, error) {
	o := &output{w: c.App.Writer, mode: modeJSON}
	tty := isTerminal(c.App.Writer)
	o.color = tty && os.Getenv("NO_COLOR") == ""
	if f, ok := lookupFlag(c.Command, "format").(*formatFlagType); ok {
		o.fields = f.fields
	}
	format := c.String("format")
	asJSON := c.Bool("json")
	if asJSON && format != "" && os.Getenv("AGT_JSON") != "" {
		// AGT_JSON is every command's default; a --format is this command's, and wins.
		asJSON = false
	}
	switch {
	case asJSON || format == "json":
	case format == "table":
		o.mode = modeTable
	case format != "":
		t, err := parseTemplate(format, o.fields)
		if err != nil {
			return nil, usagef(c, "bad --format: %v", err)
		}
		o.tmpl, o.mode = t, modeTemplate
	case tty:
		o.mode = modeTable
	}
	return o, nil
}

// formatFlagType is --format: a string flag that knows the JSON fields of what its command
// prints, which its templates may name.
type formatFlagType struct {
	cli.StringFlag
	fields []string
}

// formatFlag is the --format flag of command, whose items have the JSON fields of v (a struct,
// or a pointer to one); example is a template that works on them. Its environment variable is
// AGT_<COMMAND>_FORMAT: the commands print different things.
func formatFlag(command string, v any, example string) cli.Flag {
	return formatFlagOf(command, jsonFields(reflect.TypeOf(v)), example)
}

// formatFlagOf is formatFlag for items whose fields are named in a table, not by a type.
func formatFlagOf(command string, fields []string, example string) cli.Flag {
	return &formatFlagType{
		StringFlag: cli.StringFlag{
			Name: "format",
			Usage: "print each item with a Go template ('" + example + "'), or 'table' or 'json'; " +
				"fields: ." + strings.Join(fields, ", .") + " (each also as its Go-style alias: .exit_code is .ExitCode)",
			EnvVars: []string{"AGT_" + strings.ToUpper(command) + "_FORMAT"},
		},
		fields: fields,
	}
}

// jsonFields lists the JSON names of t's fields, in order, those of embedded structs included.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			for _, n := range jsonFields(f.Type) {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		case f.IsExported():
			if name == "" {
				name = f.Name
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// alias is the Go-style name of a JSON field: exit_code → ExitCode, cost_usd → CostUSD.
func alias(key string) string {
	var b strings.Builder
	for _, part := range strings.Split(key, "_") {
		switch part {
		case "id", "pid", "ms", "usd", "ok", "ts", "url", "json", "tty":
			b.WriteString(strings.ToUpper(part))
		case "":
		default:
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// parseTemplate parses a --format template and checks that every field it names at the top
// level is one of fields or an alias of one (inside range and with, the dot is something
// else and is not checked). With no fields known, any name passes.
func parseTemplate(text string, fields []string) (*template.Template, error) {
	t, err := template.New("format").Funcs(template.FuncMap{"json": toJSON}).Parse(text)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return t, nil
	}
	known := map[string]bool{}
	for _, f := range fields {
		known[f], known[alias(f)] = true, true
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkFields(tt.Tree.Root, known); err != nil {
			return nil, fmt.Errorf("%v; the fields are .%s", err, strings.Join(fields, ", ."))
		}
	}
	return t, nil
}

// checkFields walks a template's parse tree and returns an error naming the first field that
// is not known.
func checkFields(n parse.Node, known map[string]bool) error {
	check := func(ident []string) error {
		if len(ident) > 0 && !known[ident[0]] {
			return fmt.Errorf("no field .%s", ident[0])
		}
		return nil
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkFields(c, known); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkFields(n.Pipe, known)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			if err := checkFields(c, known); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if err := checkFields(a, known); err != nil {
				return err
			}
		}
	case *parse.FieldNode:
		return check(n.Ident)
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			return check(n.Ident[1:])
		}
	case *parse.ChainNode:
		return checkFields(n.Node, known)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode, known, true)
	case *parse.RangeNode:
		return checkBranch(&n.BranchNode, known, false)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode, known, false)
	case *parse.TemplateNode:
		return checkFields(n.Pipe, known)
	}
	return nil
}

// checkBranch checks an if, range or with: its pipeline and else branch see the same dot; its
// body does only for if.
func checkBranch(b *parse.BranchNode, known map[string]bool, sameDot bool) error {
	if err := checkFields(b.Pipe, known); err != nil {
		return err
	}
	if sameDot {
		if err := checkFields(b.List, known); err != nil {
			return err
		}
	}
	return checkFields(b.ElseList, known)
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr }) // an *os.File, or stderr made safe
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// safeCell is a table's cell with what an agent wrote escaped (termsafe.Line). A cell agt
// coloured itself (stateCell: one of its colours, the text, a reset) keeps its colour, and the
// text inside is escaped.
func safeCell(c string) string {
	if sgr, text, ok := cutCellColor(c); ok {
		return sgr + termsafe.Line(text) + sgrReset
	}
	return termsafe.Line(c)
}

// cutCellColor splits a cell agt coloured into its colour and its text.
func cutCellColor(c string) (sgr, text string, ok bool) {
	if inner, ok := strings.CutSuffix(c, sgrReset); ok {
		for _, sgr := range []string{"\x1b[39m", sgrYellow, sgrRed, sgrGreen, sgrBold, sgrDim} {
			if text, ok := strings.CutPrefix(inner, sgr); ok {
				return sgr, text, true
			}
		}
	}
	return "", c, false
}

// cellWidth is the columns a safe cell takes on a terminal: its colour takes none.
func cellWidth(c string) int {
	_, text, _ := cutCellColor(c)
	return utf8.RuneCountInString(text)
}

// rawFile is the file w writes to, for agt's own control sequences (a status line redrawn in
// place): stderr behind safeFile too. What such a line shows of an agent it escapes itself.
func rawFile(w io.Writer) (*os.File, bool) {
	if sf, ok := w.(safeFile); ok {
		return sf.File, true
	}
	f, ok := w.(*os.File)
	return f, ok
}

// safeFile is a file that what agt writes reaches escaped (termsafe.Text): stderr, where
// diagnostics quote agents' words, states' reasons and tool names. agt's own sequences there
// (the status line) go to the file itself (rawFile).
type safeFile struct{ *os.File }

func (f safeFile) Write(b []byte) (int, error) {
	if _, err := io.WriteString(f.File, termsafe.Text(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// item writes one item in JSON or template mode. raw, when not nil, is v's JSON already (one
// object): written as is in JSON mode, and what a template sees.
func (o *output) item(v any, raw []byte) error {
	switch o.mode {
	case modeTemplate:
		data, err := o.templateData(v, raw)
		if err != nil {
			return err
		}
		var b strings.Builder
		if err := o.tmpl.Execute(&b, data); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
		s := b.String()
		if s == "" {
			return nil // a template may select: print nothing for what it skips
		}
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		_, err = io.WriteString(o.w, s)
		return err
	default:
		if raw == nil {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				return err
			}
		}
		// encoding/json and a record's own files leave C1 controls raw: escaped (R35).
		if _, err := o.w.Write(termsafe.JSON(raw)); err != nil {
			return err
		}
		_, err := o.w.Write([]byte{'\n'})
		return err
	}
}

// templateData is what a template sees of an item: its JSON object, each field under its JSON
// name and its alias, nested objects alike; a field the item leaves out (or null) is empty.
func (o *output) templateData(v any, raw []byte) (map[string]any, error) {
	if raw == nil {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	for _, f := range o.fields {
		if _, ok := m[f]; !ok {
			m[f] = nil
		}
	}
	return withAliases(m).(map[string]any), nil
}

// withAliases adds the alias of every key of every object in v, makes nulls empty strings (a
// template prints a nil as "<no value>"), numbers int64 when whole, else float64, so that
// templates compare them with constants (ge .delay_ms 800), and strings safe for a terminal:
// what an agent wrote is shown, never acted on (R35).
func withAliases(v any) any {
	switch v := v.(type) {
	case string:
		return termsafe.Text(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		for _, k := range keys {
			x := withAliases(v[k])
			v[k] = x
			if a := alias(k); a != k {
				if _, taken := v[a]; !taken {
					v[a] = x
				}
			}
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = withAliases(x)
		}
		return v
	case nil:
		return ""
	}
	return v
}

// table writes rows under a header, aligned.
//
// Each column but the last is as wide as its widest cell, plus two spaces, as a tabwriter's
// would be; widths are measured without the colour of a cell (text/tabwriter counts its escape
// sequences, which pushed the header off its coloured column).
func (o *output) table(header []string, rows [][]string) error {
	lines := make([][]string, 0, len(rows)+1)
	lines = append(lines, header)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = safeCell(c)
		}
		lines = append(lines, cells)
	}
	var widths []int
	for _, l := range lines {
		for i := 0; i < len(l)-1; i++ {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], cellWidth(l[i]))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		for i, c := range l {
			b.WriteString(c)
			if i < len(l)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-cellWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(o.w, b.String())
	return err
}

// tildePath writes a path under home with ~, for people.
func tildePath(path, home string) string {
	if home != "" && strings.HasPrefix(path, home+"/") {
		return "~" + path[len(home):]
	}
	return path
}

// line writes one human line (table mode) or the item (NDJSON, template).
func (o *output) line(v any, human string) error {
	if o.mode == modeTable {
		_, err := fmt.Fprintln(o.w, termsafe.Text(human))
		return err
	}
	return o.item(v, nil)
}

// roundCost rounds the cost_usd of an event line to a millionth of a dollar: figures summed
// or subtracted from the agents' floats carry noise (0.008459999999999999).
func roundCost(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"cost_usd":`)) {
		return line
	}
	v := gjson.GetBytes(line, "cost_usd")
	if v.Type != gjson.Number || v.Index <= 0 {
		return line
	}
	r := stream.AppendCost(nil, roundUSD(v.Float()))
	if bytes.Equal(r, []byte(v.Raw)) {
		return line
	}
	out := make([]byte, 0, len(line)+len(r))
	out = append(append(append(out, line[:v.Index]...), r...), line[v.Index+len(v.Raw):]...)
	return out
}

// roundUSD rounds a cost to a millionth of a dollar, for the templates that read it as a number
// (AppendCost rounds what is written).
func roundUSD(f float64) *float64 {
	r := stream.RoundUSD(f)
	return &r
}

// safeLine is s escaped for a terminal (termsafe.Text) on one line cut to n runes: for
// columns that hold an agent's words.
func safeLine(s string, n int) string { return oneLine(termsafe.Text(s), n) }

// oneLine puts s on one line, cut to n runes: for columns that hold an agent's words.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
