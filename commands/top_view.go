package commands

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"agt/stream"
	"agt/termsafe"
)

// Styles of top. Colour only where the user has it (a terminal, NO_COLOR unset); the
// selection is also marked by "›", which needs none.
var (
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleTitle    = lipgloss.NewStyle().Bold(true)
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleNeeds    = lipgloss.NewStyle().Foreground(lipgloss.Color("3")).Bold(true)
	styleFailed   = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	styleRunning  = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
)

// topColumn is one column of top's list: its header, its width bounds, how to render a row,
// and its priority (a narrow terminal drops the highest first; 0 is never dropped).
type topColumn struct {
	header   string
	min, max int
	drop     int
	cell     func(m *topModel, r *topRow) string
}

// topColumns are the list's columns, in order. WHAT takes what is left of the width.
var topColumns = []topColumn{
	{header: "HOST", min: 4, max: 16, drop: 5, cell: func(_ *topModel, r *topRow) string { return r.Host }},
	{header: "NAME", min: 4, max: 24, cell: func(_ *topModel, r *topRow) string { return dash(r.Name) }},
	{header: "KIND", min: 4, max: 10, drop: 3, cell: func(_ *topModel, r *topRow) string { return dash(r.Kind) }},
	{header: "STATE", min: 5, max: 11, cell: func(_ *topModel, r *topRow) string { return r.stateText() }},
	{header: "WHAT", min: 16, cell: func(_ *topModel, r *topRow) string { return r.what() }},
	{header: "FOR", min: 3, max: 5, drop: 2, cell: func(m *topModel, r *topRow) string { return since(r.Since, m.now) }},
	{header: "COST", min: 4, max: 9, drop: 4, cell: func(_ *topModel, r *topRow) string { return costText(r.CostUSD) }},
	{header: "WORKSPACE", min: 9, max: 40, drop: 6, cell: func(_ *topModel, r *topRow) string { return dash(tildePath(r.Workspace, homeDir)) }},
}

// what is the WHAT column: what the agent waits on its user for, else what it does, else why
// it is in its state.
func (r *topRow) what() string {
	switch {
	case r.Unreachable != "":
		return "host unreachable: " + r.Unreachable
	case r.Waiting != nil:
		return "? " + waitingLine(r.Waiting)
	case r.Doing != "":
		return "▸ " + r.Doing
	case r.Error != "" && wordIndex(r.Reason, r.Error) < 0: // "gave up after 2 restarts (exit code 1)" holds it
		return strings.TrimSpace(r.Reason + " " + r.Error)
	}
	return r.Reason
}

// stateText is the STATE column: the agent's, or unreachable while its host is.
func (r *topRow) stateText() string {
	if r.Unreachable != "" {
		return hostUnreachable
	}
	return r.State
}

// hostUnreachable is the state top and serve show for the agents of a host that cannot be
// reached: what the host said of them last is not known to hold.
const hostUnreachable = "unreachable"

// layout picks the columns that fit width and their widths.
func (m *topModel) layout(width int) ([]topColumn, []int) {
	hosts := false
	for i := range m.rows {
		hosts = hosts || m.rows[i].Host != ""
	}
	cols := make([]topColumn, 0, len(topColumns))
	for _, c := range topColumns {
		if c.header == "HOST" && !hosts {
			continue
		}
		cols = append(cols, c)
	}
	// Each column as wide as its widest visible cell, within its bounds.
	widths := make([]int, len(cols))
	first, last := m.off, min(len(m.rows), m.off+m.listHeight())
	for i, c := range cols {
		w := utf8.RuneCountInString(c.header)
		if c.max > 0 {
			for j := first; j < last; j++ {
				w = max(w, utf8.RuneCountInString(c.cell(m, &m.rows[j])))
			}
			w = min(w, c.max)
		}
		widths[i] = max(w, c.min)
	}
	for {
		total := 2 // the selection mark
		for i := range cols {
			total += widths[i] + 2
		}
		if total <= width {
			for i, c := range cols {
				if c.max == 0 {
					widths[i] += width - total // WHAT takes the rest
				}
			}
			return cols, widths
		}
		drop := -1
		for i, c := range cols {
			if c.drop > 0 && (drop < 0 || c.drop > cols[drop].drop) {
				drop = i
			}
		}
		if drop < 0 {
			// Nothing left to drop: squeeze WHAT, then NAME, to their least.
			for i := range cols {
				widths[i] = max(cols[i].min, widths[i]-(total-width))
			}
			return cols, widths
		}
		cols = append(cols[:drop:drop], cols[drop+1:]...)
		widths = append(widths[:drop:drop], widths[drop+1:]...)
	}
}

// View draws the screen: a title, the list (or the transcript), a status line and the keys.
func (m *topModel) View() tea.View {
	var b strings.Builder
	if m.view == viewTranscript {
		m.drawTranscript(&b)
	} else {
		m.drawList(&b)
	}
	b.WriteString(m.bottom())
	v := tea.NewView(b.String())
	v.AltScreen = true
	v.WindowTitle = "agt top"
	return v
}

func (m *topModel) paint(s lipgloss.Style, text string) string {
	if !m.color || text == "" {
		return text
	}
	return s.Render(text)
}

// drawList writes the title, the header and the visible rows.
func (m *topModel) drawList(b *strings.Builder) {
	needs, running := 0, 0
	down := map[string]bool{}
	for i := range m.rows {
		switch r := &m.rows[i]; {
		case r.Unreachable != "":
			down[r.Host] = true
		case r.needs():
			needs++
		case r.State == stream.Running:
			running++
		}
	}
	title := fmt.Sprintf("agt top · %d agent%s · %d need%s you · %d running", len(m.rows), plural(len(m.rows)), needs, map[bool]string{true: "s", false: ""}[needs == 1], running)
	if len(down) > 0 {
		title += fmt.Sprintf(" · %d host%s unreachable", len(down), plural(len(down)))
	}
	b.WriteString(m.paint(styleTitle, fit(title, m.width)))
	b.WriteByte('\n')
	cols, widths := m.layout(m.width)
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = c.header
	}
	b.WriteString(m.paint(styleDim, fit("  "+joinCells(cells, widths), m.width)))
	b.WriteByte('\n')
	h := m.listHeight()
	for j := m.off; j < m.off+h; j++ {
		if j >= len(m.rows) {
			if j == 0 {
				b.WriteString("  no agents: agt spawn starts one")
			}
			b.WriteByte('\n')
			continue
		}
		r := &m.rows[j]
		for i, c := range cols {
			cells[i] = safeLine(c.cell(m, r), 1<<16)
		}
		mark := "  "
		if j == m.cur {
			mark = "› "
		}
		line := fit(mark+joinCells(cells, widths), m.width)
		switch {
		case j == m.cur:
			line = m.paint(styleSelected, line)
		case r.Unreachable != "":
			line = m.paint(styleFailed, line)
		case r.needs() && r.State != stream.Failed && r.State != stream.Lost:
			line = m.paint(styleNeeds, line)
		case r.State == stream.Failed || r.State == stream.Lost:
			line = m.paint(styleFailed, line)
		case r.State == stream.Running:
			line = m.paint(styleRunning, line)
		case stream.IsFinal(r.State):
			line = m.paint(styleDim, line)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

// drawTranscript writes the title and the end of the agent's transcript, scrolled up by
// tscroll lines.
func (m *topModel) drawTranscript(b *strings.Builder) {
	host, name := splitKey(m.tkey)
	title := "agt top · " + termsafe.Text(qualifiedKey(host, name)) + " · transcript (Esc back)"
	b.WriteString(m.paint(styleTitle, fit(title, m.width)))
	b.WriteByte('\n')
	h := max(1, m.height-3)
	end := len(m.tlines) - m.tscroll
	start := max(0, end-h)
	for i := 0; i < h; i++ {
		if start+i < end {
			b.WriteString(fit(m.tlines[start+i], m.width))
		}
		b.WriteByte('\n')
	}
}

// bottom is the status line and the keys, or the line being typed.
func (m *topModel) bottom() string {
	var status, keys string
	name := ""
	if r := m.selected(); r != nil {
		name = termsafe.Text(r.label())
	}
	switch m.view {
	case viewPrompt:
		what := "message to " + name
		if m.prompt == "deny" {
			what = "deny " + name + ", telling it"
		}
		status = what + ": " + string(m.input) + "█"
		keys = "Enter " + m.prompt + " · Esc cancel"
	case viewConfirm:
		status = "stop " + name + "? y/n"
	default:
		status = m.status
		keys = "↑↓ move · Enter transcript · a approve · d deny · s send · i interrupt · x stop · t attach · q quit"
		if m.view == viewTranscript {
			keys = "↑↓ scroll · Esc back · a approve · d deny · s send · i interrupt · x stop · t attach"
		}
	}
	return fit(termsafe.Text(status), m.width) + "\n" + m.paint(styleDim, fit(keys, m.width))
}

// joinCells pads each cell to its width and joins them with two spaces.
func joinCells(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(pad(c, widths[i]))
	}
	return b.String()
}

// pad cuts s to w runes (with … when cut) or pads it with spaces to w.
func pad(s string, w int) string {
	n := utf8.RuneCountInString(s)
	if n > w {
		if w <= 0 {
			return ""
		}
		return string([]rune(s)[:w-1]) + "…"
	}
	return s + strings.Repeat(" ", w-n)
}

// fit cuts a line to the terminal's width.
func fit(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	return pad(s, width)
}

// costText is a cost as people read it: the digits that matter, never $0.00 for a cost under a
// cent; "-" for none.
func costText(c *float64) string {
	if c == nil {
		return "-"
	}
	return usd(*c)
}
