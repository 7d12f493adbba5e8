package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/termsafe"
)

// What top's screen shows.
const (
	viewList       = iota // the agents
	viewTranscript        // one agent's events
	viewPrompt            // a line of text to type: a deny's message, a message to send
	viewConfirm           // stop NAME? y/n
)

// topModel is top's state: the rows, the selection, the view, and the line of text being typed.
// Update changes it; View draws it (top_view.go). The actions run as commands off the loop.
type topModel struct {
	ctx   context.Context
	fleet *fleet
	root  string // the run directory, for attach
	// send hands the program a message from outside its loop (a host's transcript); nil in
	// tests, which have no program.
	send func(tea.Msg)

	rows  []topRow       // sorted: those that need the user first
	index map[string]int // row key → position in rows
	sel   string         // the selected row's key: it stays selected as rows move
	// moved: the user moved the selection, or acted on it. Until then it stays on the first
	// row, the agent that needs them most, however the rows come (a host's, after this
	// machine's).
	moved bool
	cur   int // the selected row's position
	off   int // the first row shown

	width, height int
	color, bell   bool
	now           time.Time

	view   int
	back   int    // the view a prompt or a confirmation returns to
	prompt string // what the line typed is for: "deny" or "send"
	input  []rune
	status string // what the last action did, or why it failed

	// The transcript view: whose (its row's key), its lines (made safe), and how far up it is
	// scrolled. An agent of a host has its events streamed (traw, the last transcriptMax of
	// them) until the view closes (tstop).
	tkey    string
	tlines  []string
	tscroll int
	traw    [][]byte
	tstop   context.CancelFunc
}

// Messages from outside the loop.
type (
	rowsMsg struct {
		host   string // the source of the rows: their Host
		rows   []topRow
		all    bool            // rows is every row of host: those missing went
		logged map[string]bool // agents whose logs grew
	}
	actionMsg struct{ text string }
	// transcriptMsg brings events of a host's agent to its open transcript.
	transcriptMsg struct {
		key   string
		lines [][]byte
	}
	clockMsg time.Time
)

// transcriptMax bounds the events the transcript view reads back.
const transcriptMax = 500

func newTopModel(ctx context.Context, f *fleet, root string, color bool) *topModel {
	m := &topModel{ctx: ctx, fleet: f, root: root, color: color, index: map[string]int{}, width: 80, height: 24, now: time.Now()}
	if f.local != nil {
		m.apply(rowsMsg{host: f.local.host, rows: f.rows(), all: true})
	}
	return m
}

func (m *topModel) Init() tea.Cmd { return tick() }

// tick redraws once a second: the times shown age.
func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return clockMsg(t) })
}

// apply merges new rows in, keeps the selection on the same agent, and rings the bell when an
// agent starts to need the user.
func (m *topModel) apply(msg rowsMsg) (bell bool) {
	byKey := map[string]topRow{}
	for _, r := range msg.rows {
		byKey[r.key()] = r
	}
	rows := make([]topRow, 0, len(m.rows)+len(msg.rows))
	for _, old := range m.rows {
		if r, ok := byKey[old.key()]; ok {
			delete(byKey, old.key())
			if !r.Gone {
				bell = bell || r.needs() && !old.needs()
				rows = append(rows, r)
			}
			continue
		}
		if msg.all && old.Host == msg.host {
			continue // every row of its source came, and it was not among them
		}
		rows = append(rows, old)
	}
	for _, r := range msg.rows {
		if _, left := byKey[r.key()]; !left || r.Gone {
			continue
		}
		delete(byKey, r.key())
		bell = bell || r.needs() && !stream.IsFinal(r.State) && len(m.index) > 0
		rows = append(rows, r)
	}
	sortRows(rows)
	m.rows = rows
	m.index = make(map[string]int, len(rows))
	for i := range rows {
		m.index[rows[i].key()] = i
	}
	if i, ok := m.index[m.sel]; ok && m.moved {
		m.cur = i
	} else if !m.moved && len(rows) > 0 {
		m.cur, m.sel = 0, rows[0].key()
	} else {
		m.cur = min(m.cur, len(rows)-1)
		m.cur = max(m.cur, 0)
		m.sel = ""
		if len(rows) > 0 {
			m.sel = rows[m.cur].key()
		}
	}
	m.scrollToCursor()
	return bell
}

// selected is the selected row, nil when there is none.
func (m *topModel) selected() *topRow {
	if m.cur < 0 || m.cur >= len(m.rows) {
		return nil
	}
	return &m.rows[m.cur]
}

func (m *topModel) move(to int) {
	if len(m.rows) == 0 {
		return
	}
	m.cur = max(0, min(to, len(m.rows)-1))
	m.sel, m.moved = m.rows[m.cur].key(), true
	m.scrollToCursor()
}

// listHeight is how many rows of agents fit: the screen less the title, the header, the
// status line and the keys.
func (m *topModel) listHeight() int { return max(1, m.height-4) }

func (m *topModel) scrollToCursor() {
	h := m.listHeight()
	if m.cur < m.off {
		m.off = m.cur
	}
	if m.cur >= m.off+h {
		m.off = m.cur - h + 1
	}
	m.off = max(0, min(m.off, len(m.rows)-h))
}

func (m *topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.scrollToCursor()
	case clockMsg:
		m.now = time.Time(msg)
		return m, tick()
	case rowsMsg:
		bell := m.apply(msg)
		if host, name := splitKey(m.tkey); m.view == viewTranscript && host == msg.host {
			if m.tstop != nil || msg.all || msg.logged[name] {
				m.loadTranscript() // a host's: what it waits for may have changed
			}
		}
		if bell && m.bell {
			return m, tea.Raw("\a")
		}
	case actionMsg:
		m.status = msg.text
	case transcriptMsg:
		if msg.key == m.tkey && m.tstop != nil {
			m.traw = append(m.traw, msg.lines...)
			if n := len(m.traw) - transcriptMax; n > 0 {
				m.traw = append(m.traw[:0], m.traw[n:]...)
			}
			m.loadTranscript()
		}
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// key handles a key press in the current view.
func (m *topModel) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	if key == "ctrl+c" {
		return m, tea.Quit
	}
	switch m.view {
	case viewPrompt:
		return m.promptKey(k)
	case viewConfirm:
		m.view = m.back
		if key == "y" {
			return m, m.act("stop")
		}
		m.status = "stop cancelled"
		return m, nil
	case viewTranscript:
		switch key {
		case "q", "esc", "left", "h":
			m.view = viewList
			m.closeTranscript()
			return m, nil
		case "up", "k":
			m.tscroll++
		case "down", "j":
			m.tscroll--
		case "pgup", "b":
			m.tscroll += m.height - 3
		case "pgdown", "space", "f":
			m.tscroll -= m.height - 3
		case "home", "g":
			m.tscroll = len(m.tlines)
		case "end", "G":
			m.tscroll = 0
		default:
			return m.actionKey(key)
		}
		m.tscroll = max(0, min(m.tscroll, len(m.tlines)-(m.height-2)))
		return m, nil
	}
	switch key {
	case "q", "esc":
		return m, tea.Quit
	case "up", "k":
		m.move(m.cur - 1)
	case "down", "j":
		m.move(m.cur + 1)
	case "pgup", "b":
		m.move(m.cur - m.listHeight())
	case "pgdown", "space", "f":
		m.move(m.cur + m.listHeight())
	case "home", "g":
		m.move(0)
	case "end", "G":
		m.move(len(m.rows) - 1)
	case "enter", "l", "right":
		if r := m.selected(); r != nil && r.Name != "" {
			m.openTranscript(r)
		}
	default:
		return m.actionKey(key)
	}
	return m, nil
}

// actionKey starts the action of a key on the selected agent.
func (m *topModel) actionKey(key string) (tea.Model, tea.Cmd) {
	r := m.selected() // in the transcript view, the agent shown: it stays selected
	if r == nil {
		return m, nil
	}
	m.moved = true // what the user acts on stays selected

	switch key {
	case "a":
		return m, m.act("approve")
	case "A":
		return m, m.act("approve-always")
	case "d", "s":
		m.back, m.view, m.input = m.view, viewPrompt, nil
		m.prompt = map[string]string{"d": "deny", "s": "send"}[key]
	case "i":
		return m, m.act("interrupt")
	case "x":
		m.back, m.view = m.view, viewConfirm
	case "t":
		return m, m.attach(r)
	}
	return m, nil
}

// promptKey edits the line being typed; Enter sends it, Esc gives up.
func (m *topModel) promptKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	back := m.back
	switch k.String() {
	case "esc":
		m.view, m.status = back, m.prompt+" cancelled"
		return m, nil
	case "enter":
		m.view = back
		return m, m.act(m.prompt)
	case "backspace":
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case "ctrl+u":
		m.input = nil
	default:
		if t := k.Text; t != "" && len(m.input) < 4096 {
			m.input = append(m.input, []rune(t)...)
		}
	}
	return m, nil
}

// act runs an action on the selected agent off the loop, with the code agt's commands run,
// and reports what it did as the status line.
func (m *topModel) act(what string) tea.Cmd {
	r := m.selected()
	if r == nil {
		return nil
	}
	name, text := r.label(), string(m.input)
	m.input = nil
	ctx := m.ctx
	f := m.fleet
	row := *r
	return func() tea.Msg {
		act := fleetAction{What: what, ID: row.waitingID(), Text: text}
		if what == "approve-always" {
			act.What, act.Always = "approve", true
		}
		if what == "send" && strings.TrimSpace(text) == "" {
			return actionMsg{"nothing sent: the message was empty"}
		}
		res, err := f.act(ctx, act, &row)
		if err != nil {
			return actionMsg{fmt.Sprintf("%s %s: %s", what, name, firstLine(err.Error()))}
		}
		return actionMsg{res}
	}
}

// waitingID is the request an approve or deny of the row answers: the one top shows.
func (r *topRow) waitingID() string {
	if r.Waiting == nil {
		return ""
	}
	return r.Waiting.ID
}

// attach gives the terminal to agt attach NAME (the command itself, run from this very binary;
// HOST:NAME for an agent of a host, which it reaches with ssh -t) and takes it back when that
// ends: after a detach, or at once for an agent with no terminal.
func (m *topModel) attach(r *topRow) tea.Cmd {
	name := r.Name
	if m.fleet.hostOfRow(r) != nil {
		name = r.Host + ":" + r.Name
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"agt", "--run-dir", m.root, "attach", name}}
	name = r.label()
	// What attach says (detached, how the agent ended, why it could not) goes to the status
	// line, not onto the shell's screen under top's.
	said := &lastLine{}
	cmd.Stderr = said
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		var ee *exec.ExitError
		switch {
		case err == nil && said.String() == "":
			return actionMsg{"back from " + name} // over ssh -t, what it said was on its terminal
		case err == nil:
			return actionMsg{"back from " + name + ": " + strings.TrimPrefix(said.String(), "agt: ")}
		case errors.As(err, &ee):
			return actionMsg{fmt.Sprintf("attach %s: exit code %d: %s", name, ee.ExitCode(), strings.TrimPrefix(said.String(), "agt: "))}
		}
		return actionMsg{"attach " + name + ": " + err.Error()}
	})
}

// loadTranscript renders the transcript's agent's last events, made safe, one screen line
// each: read back from its log here, or those its host sent.
func (m *topModel) loadTranscript() {
	host, name := splitKey(m.tkey)
	if m.tstop != nil {
		waiting := ""
		if i, ok := m.index[m.tkey]; ok {
			waiting = waitingText(m.rows[i].Waiting)
		}
		m.tlines = renderTranscript(m.traw, host, name, waiting)
		return
	}
	a, err := m.fleet.local.d.Agent(name)
	if err != nil {
		m.tlines = []string{"(" + termsafe.Text(qualifiedKey(host, name)) + " is gone)"}
		return
	}
	var lines [][]byte
	state.ReadLogBack(a.Path(state.EventsFile), func(line []byte) bool {
		lines = append(lines, append([]byte(nil), line...))
		return len(lines) < transcriptMax
	})
	slices.Reverse(lines)
	m.tlines = renderTranscript(lines, "", name, waitingLineOf(a))
}

// renderTranscript renders events (oldest first) as the transcript view's lines, made safe;
// waiting, when set, ends it. A host's agent is HOST:NAME in them, as in tail --host, so that
// the commands they quote (agt approve HOST:NAME ID) work when pasted here.
func renderTranscript(lines [][]byte, host, name, waiting string) []string {
	label := qualifiedKey(host, name)
	t := &transcript{color: false, nameWidth: len(label)}
	var b strings.Builder
	for _, l := range lines {
		if host != "" {
			l = relabel(l, qualified(host, name))
		}
		t.event(&b, l)
	}
	if waiting != "" {
		b.WriteString("→ " + waiting + "\n")
	}
	text := strings.TrimRight(b.String(), "\n")
	return strings.Split(termsafe.Text(text), "\n")
}

// waitingLineOf is what the transcript ends with when a waits on a request: the keys that
// answer it.
func waitingLineOf(a *state.Agent) string {
	return waitingText(spawn.WaitingFor(a, spawn.Observe(a)))
}

// waitingText is the transcript's last line for a request w, "" for none.
func waitingText(w *spawn.Waiting) string {
	if w == nil || w.ID == "" {
		return ""
	}
	return waitingLine(w) + "  (a approve · d deny)"
}

// lastLine keeps the last line written to it, bounded: what a command said last.
type lastLine struct {
	mu   sync.Mutex
	line []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range bytes.Split(p, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			l.line = append(l.line[:0], line[:min(len(line), 1024)]...)
		}
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.line)
}
