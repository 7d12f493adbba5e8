package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"
)

// Output modes, in the order they are chosen: --json, --format, a terminal, else NDJSON.
const (
	modeJSON = iota
	modeTemplate
	modeTable
)

// output writes a command's data: NDJSON, a Go template per item, or a table.
type output struct {
	w    io.Writer
	mode int
	tmpl *template.Template
}

// outputFor picks the format for c: --json → NDJSON; --format → template (or "table", "json");
// stdout a terminal → table; else NDJSON.
func outputFor(c *cli.Context) (*output, error) {
	o := &output{w: c.App.Writer, mode: modeJSON}
	format := c.String("format")
	switch {
	case c.Bool("json") || format == "json":
	case format == "table":
		o.mode = modeTable
	case format != "":
		t, err := template.New("format").Funcs(template.FuncMap{"json": toJSON}).Parse(format)
		if err != nil {
			return nil, usagef(c, "bad --format: %v", err)
		}
		o.tmpl, o.mode = t, modeTemplate
	case isTerminal(c.App.Writer):
		o.mode = modeTable
	}
	return o, nil
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// item writes one item in JSON or template mode. In JSON mode raw, when not nil, is written as
// is (it is already one JSON object).
func (o *output) item(v any, raw []byte) error {
	switch o.mode {
	case modeTemplate:
		var b strings.Builder
		if err := o.tmpl.Execute(&b, v); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
		s := b.String()
		if s == "" {
			return nil // a template may select: print nothing for what it skips
		}
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		_, err := io.WriteString(o.w, s)
		return err
	default:
		if raw == nil {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				return err
			}
		}
		if _, err := o.w.Write(raw); err != nil {
			return err
		}
		_, err := o.w.Write([]byte{'\n'})
		return err
	}
}

// table writes rows under a header, aligned.
func (o *output) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
