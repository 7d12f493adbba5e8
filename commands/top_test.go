package commands

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// fleetRows makes n rows of every kind top shows: working, asking, failed, ended.
func fleetRows(n int) []topRow {
	rows := make([]topRow, n)
	since := time.Now().Add(-90 * time.Second)
	cost := 0.0123
	for i := range rows {
		r := topRow{Name: fmt.Sprintf("agent-%04d", i), Kind: "claude", State: stream.Running, Since: since,
			Doing: "Bash go test ./...", CostUSD: &cost, Workspace: fmt.Sprintf("/home/u/src/app-agt/agent-%04d", i)}
		switch i % 10 {
		case 0:
			r.State, r.Reason, r.Doing = stream.Waiting, stream.ReasonPermission, ""
			r.Waiting = &spawn.Waiting{Reason: stream.ReasonPermission, ID: "req-1", Tool: "Bash", Input: []byte(`{"command":"mkdir x && make test"}`), Pending: 1}
		case 1:
			r.State, r.Reason, r.Error, r.Doing = stream.Failed, "auth", "invalid API key", ""
		case 2:
			r.State, r.Reason, r.Doing = stream.Exited, "", ""
		}
		rows[i] = r
	}
	return rows
}

func newTestTop(rows []topRow, w, h int, color bool) *topModel {
	m := &topModel{ctx: context.Background(), color: color, index: map[string]int{}, width: w, height: h, now: time.Now(), bell: true}
	m.apply(rowsMsg{rows: rows, all: true})
	return m
}

// TestTopOrder: agents that need their user come first (a request before a failure before a
// question of input), then those at work, then the ended.
func TestTopOrder(t *testing.T) {
	m := newTestTop(fleetRows(30), 120, 40, false)
	var got []string
	for _, r := range m.rows[:6] {
		got = append(got, r.State)
	}
	want := "waiting waiting waiting failed failed failed"
	if strings.Join(got, " ") != want {
		t.Errorf("first rows: %v, want %s", got, want)
	}
	if last := m.rows[len(m.rows)-1]; last.State != stream.Exited {
		t.Errorf("last row %s, want an ended one", last.State)
	}
}

// TestTopSmallNoColor: at 40x8 with NO_COLOR every line fits, no escape is drawn, the columns
// that do not fit are dropped (WORKSPACE first), and what an agent waits for shows.
func TestTopSmallNoColor(t *testing.T) {
	m := newTestTop(fleetRows(50), 40, 8, false)
	content := m.View().Content
	if strings.ContainsRune(content, '\x1b') {
		t.Errorf("an escape with NO_COLOR:\n%q", content)
	}
	lines := strings.Split(strings.TrimRight(content, "\n"), "\n")
	if len(lines) > 8 {
		t.Errorf("%d lines on an 8-line terminal", len(lines))
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 40 {
			t.Errorf("a line of %d runes on a 40-column terminal: %q", n, l)
		}
	}
	if strings.Contains(content, "WORKSPACE") || !strings.Contains(content, "? permission:") {
		t.Errorf("want WORKSPACE dropped and the request shown:\n%s", content)
	}
	// Smaller still: it draws, and does not panic.
	m.Update(tea.WindowSizeMsg{Width: 5, Height: 2})
	_ = m.View()
}

// TestTopEscapesAgentText: bytes an agent controls reach the screen escaped.
func TestTopEscapesAgentText(t *testing.T) {
	rows := fleetRows(1)
	rows[0].Waiting.Input = []byte(`{"command":"echo \u001b]52;c;aGk=\u0007 \u009b31m"}`)
	rows[0].Name = "evil"
	m := newTestTop(rows, 120, 10, false)
	content := m.View().Content
	if strings.ContainsAny(content, "\x1b\x07\u009b") {
		t.Errorf("raw control bytes on the screen: %q", content)
	}
	if !strings.Contains(content, `\x1b]52;c;aGk=\x07`) {
		t.Errorf("want the escape shown escaped: %q", content)
	}
}

// TestTopSelectionFollowsAgent: the selected agent stays selected when rows move, and the bell
// rings when one starts to need its user.
func TestTopSelectionFollowsAgent(t *testing.T) {
	rows := fleetRows(20)
	m := newTestTop(rows, 120, 10, false)
	m.move(len(m.rows) - 1)
	sel := m.selected().Name
	changed := *m.selected()
	changed.State, changed.Waiting = stream.Waiting, &spawn.Waiting{Reason: stream.ReasonInput}
	_, cmd := m.Update(rowsMsg{rows: []topRow{changed}})
	if m.selected().Name != sel {
		t.Errorf("selection moved to %s, want %s", m.selected().Name, sel)
	}
	if cmd == nil {
		t.Errorf("no bell when %s started to wait", sel)
	}
}

// BenchmarkTopRender draws top's screen of 1000 agents on a 200x60 terminal.
func BenchmarkTopRender(b *testing.B) {
	m := newTestTop(fleetRows(1000), 200, 60, true)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkTopUpdate merges a change of every one of 1000 agents and draws the screen: the
// worst batch a busy fleet sends.
func BenchmarkTopUpdate(b *testing.B) {
	rows := fleetRows(1000)
	m := newTestTop(rows, 200, 60, true)
	b.ReportAllocs()
	for b.Loop() {
		m.Update(rowsMsg{rows: rows})
		_ = m.View()
	}
}

// BenchmarkTopLoad reads the rows of 1000 agents from a run directory: top's start, and what
// it does when the watcher lost track.
func BenchmarkTopLoad(b *testing.B) {
	d, err := state.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		a, err := d.Create(fmt.Sprintf("agent-%04d", i))
		if err != nil {
			b.Fatal(err)
		}
		st := fmt.Sprintf(`{"v":1,"name":%q,"kind":"claude","state":"exited","since":"2026-01-01T00:00:00Z","started":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z","restarts":0,"exit_code":0,"activity":"2026-01-01T00:00:00Z","cost_usd":0.0123,"usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0},"session_total":{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0},"last_seq":2,"dir":"/src/app"}`, a.Name)
		if err := os.WriteFile(a.Path(state.StatusFile), []byte(st), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	f := &localFleet{d: d}
	b.ReportAllocs()
	for b.Loop() {
		if rows := f.all(); len(rows) != 1000 {
			b.Fatalf("%d rows", len(rows))
		}
	}
}
