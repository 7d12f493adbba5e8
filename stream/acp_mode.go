package stream

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The session's mode decides whether an ACP agent asks before it acts: claude-agent-acp 0.101
// opens sessions in Claude's "auto" mode, where it never sends session/request_permission, so no
// agt.toml rule, approve or deny would ever be consulted. agt is the one that answers
// permissions, so the client sets the mode that asks, "default", whenever the session lists it
// and is in another; an agent that then acts without asking, in a mode that lets it, ends the
// run with a failure of class config.

// acpAskingMode is the mode, in every ACP agent that lists modes so far (claude-agent-acp,
// gemini), that asks before each tool that changes something.
const acpAskingMode = "default"

// askingMode returns the mode to set on a session whose session/new (or load, resume) answer
// is result: acpAskingMode when the session lists it and is in another, else "".
func (a *ACP) askingMode(result gjson.Result) string {
	modes := result.Get("modes")
	a.mode = strings.Clone(modes.Get("currentModeId").Str)
	if a.mode == acpAskingMode {
		return ""
	}
	want := ""
	modes.Get("availableModes").ForEach(func(_, m gjson.Result) bool {
		if m.Get("id").Str == acpAskingMode {
			want = acpAskingMode
			return false
		}
		return true
	})
	return want
}

// setMode asks the agent to run the session in mode; the session opens once it answers.
func (a *ACP) setMode(mode string) {
	a.wantMode = mode
	params := AppendString([]byte(`{"sessionId":`), a.sessionID)
	params = AppendString(append(params, `,"modeId":`...), mode)
	a.call("session/set_mode", append(params, '}'))
}

// modeSet follows the answer to session/set_mode: the session is open either way. A refusal is a
// warning; should the agent then act without asking, actedAlone ends the run.
func (a *ACP) modeSet(dst []Event, refusal string) []Event {
	if refusal == "" {
		a.mode = a.wantMode
	} else {
		msg := "could not set the session's mode to " + a.wantMode + " (" + refusal + "); it stays in mode " + a.mode
		dst = append(dst, Event{Type: TypeError, Source: SourceAgent, Message: msg})
	}
	a.open()
	return dst
}

// open marks the session open and sends the prompts held until then.
func (a *ACP) open() {
	a.phase, a.opened = acpReady, true
	held := a.held
	a.held = nil
	for _, p := range held {
		a.Prompt(p)
	}
}

// modeActsAlone reports whether an agent in mode runs a tool of kind without asking: the modes
// of claude-agent-acp and gemini that approve by themselves, all tools or edits only.
func modeActsAlone(mode, kind string) bool {
	switch kind {
	case "execute", "edit", "delete", "move":
	default:
		return false // reading, searching, thinking: no agent asks for these
	}
	switch strings.ToLower(mode) {
	case "auto", "bypasspermissions", "yolo":
		return true
	case "acceptedits", "autoedit":
		return kind != "execute"
	}
	return false
}

// actedAlone checks a tool call that runs: one the agent did not ask about, in a mode that
// let it, means agt's permissions were bypassed. The turn is cancelled, and the run ends with a
// failure of class config.
func (a *ACP) actedAlone(dst []Event, t *acpTool) []Event {
	if t.asked || !modeActsAlone(a.mode, t.kind) || a.phase == acpFailed {
		return dst
	}
	msg := "the agent ran " + t.toolName() + " without asking for permission: its session is in mode " + a.mode +
		", which approves by itself, and agt could not set mode " + acpAskingMode
	ev := Event{Type: TypeError, Source: SourceAgent, Fatal: true, Class: ClassConfig, Message: msg}
	a.Cancel()
	a.failClass(0, ClassConfig, msg)
	return append(dst, ev)
}

// acpNotice is a notice update (an adapter's own word, such as claude-agent-acp's "Auto mode
// unavailable"): a warning marked as a notice, never the agent's text.
func acpNotice(msg string) Event {
	return Event{Type: TypeError, Source: SourceAgent, Message: "notice: " + msg}
}
