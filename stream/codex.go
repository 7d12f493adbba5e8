package stream

import (
	"strings"

	"github.com/tidwall/gjson"
)

// NewCodex returns the decoder of codex exec --json (thread/turn/item events, codex-cli ≥ 0.44).
//
// It reads:
//   - thread.started → session (thread_id; Codex names no model);
//   - item.completed agent_message → text; reasoning and todo_list items are skipped;
//   - item error → a warning (error, fatal false): config and deprecation notices, the
//     WebSocket fallback, "model rerouted";
//   - command_execution, file_change, mcp_tool_call, web_search and collab_tool_call items →
//     tool_use at item.started (the first one: web_search starts twice) and tool_result at
//     item.completed (with a tool_use first when no start was seen). Input and output are the
//     item as sent: Codex items are flat objects that hold the call and its outcome together.
//     The id is the item's first "id" (item_N): a web_search item carries a second one, the
//     provider's search id, which encoding/json would have picked;
//   - top-level error → a warning: Codex sends retry notices ("Reconnecting... 2/5") and errors
//     it recovers from this way; only turn.failed ends a turn;
//   - turn.completed → result; turn.failed → a fatal error, then a failed result.
//
// item.updated, turn.started, item.plan.delta, request_user_input and unknown types and item
// types are skipped.
//
// turn.completed reports usage cumulative for the thread: the result carries the difference from
// the previous turn.completed of the same thread seen by this decoder. Those totals outlive End,
// so a decoder reused for the resumed process (codex exec resume) gets per-turn figures; a fresh
// one learns where the thread stood from ResumeSession, or reports the thread's total. input_tokens counts cached
// tokens in Codex's figures: the event's input_tokens is the uncached part. Codex reports no cost.
//
// One process runs one turn, from its start: a process that exits with no turn.completed or
// turn.failed (SIGINT, a crash, a resume of an unknown thread) gets a failed result in End.
func NewCodex() Decoder { return &codexDecoder{open: true} }

type codexDecoder struct {
	open    bool            // the turn is under way
	thread  string          // current thread id
	text    string          // last agent message of the turn, the result's text
	started map[string]bool // item ids whose tool_use was sent
	totals  map[string]Usage
}

// codexMaxItems bounds the started items kept for completions that never come.
const codexMaxItems = 4096

// Decode implements Decoder.
func (d *codexDecoder) Decode(dst []Event, line []byte) []Event {
	root, blank, ok := jsonLine(line)
	if !ok {
		if blank {
			return dst
		}
		return append(dst, Unparsed(line))
	}
	var typ, threadID, item, usage, errv, message gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v
		case "thread_id":
			threadID = v
		case "item":
			item = v
		case "usage":
			usage = v
		case "error":
			errv = v
		case "message":
			message = v
		}
		return true
	})
	switch typ.Str {
	case "thread.started":
		if threadID.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		if threadID.Str != d.thread {
			d.thread = jsonString(threadID)
		}
		return append(dst, Event{Type: TypeSession, SessionID: d.thread})
	case "turn.started":
		d.open = true
		d.text = ""
		return dst
	case "item.started", "item.completed":
		if !item.IsObject() {
			return append(dst, Unparsed(line))
		}
		return d.item(dst, item, typ.Str == "item.completed")
	case "error":
		if message.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		return append(dst, agentError(jsonString(message), false))
	case "turn.completed":
		return d.turnCompleted(dst, usage)
	case "turn.failed":
		msg := errv.Get("message")
		text := jsonString(msg)
		if text == "" {
			text = "turn failed"
		}
		d.open = false
		clear(d.started)
		return append(dst, agentError(text, true), Event{Type: TypeResult, Text: text})
	case "":
		return append(dst, Unparsed(line))
	}
	return dst
}

func (d *codexDecoder) item(dst []Event, item gjson.Result, completed bool) []Event {
	switch item.Get("type").Str { // before reading every field: most items are skipped
	case "agent_message", "error", "command_execution", "file_change", "web_search", "mcp_tool_call", "collab_tool_call":
	default:
		return dst
	}
	var id, typ, text, status, exitCode, errv, tool gjson.Result
	item.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			if !id.Exists() { // web_search repeats "id": the first is the item's
				id = v
			}
		case "type":
			typ = v
		case "text":
			text = v
		case "message":
			if !text.Exists() {
				text = v
			}
		case "status":
			status = v
		case "exit_code":
			exitCode = v
		case "error":
			errv = v
		case "tool":
			tool = v
		}
		return true
	})
	switch typ.Str {
	case "agent_message":
		if !completed || text.Str == "" {
			return dst
		}
		d.text = jsonString(text)
		return append(dst, Event{Type: TypeText, Text: d.text})
	case "error":
		if !completed {
			return dst
		}
		return append(dst, agentError(jsonString(text), false))
	case "command_execution", "file_change", "web_search", "mcp_tool_call", "collab_tool_call":
	default:
		return dst
	}
	name := typ.Str
	if tool.Type == gjson.String && tool.Str != "" {
		name = tool.Str // mcp_tool_call and collab_tool_call name the tool they called
	}
	seen := d.started[id.Str]
	if seen && !completed {
		return dst // web_search starts twice
	}
	// One copy of the item serves as the input, the output, or both.
	ev := Event{Type: TypeToolUse, ID: jsonString(id), Tool: strings.Clone(name), Input: jsonRaw(item)}
	if !seen {
		dst = append(dst, ev)
		if !completed {
			if d.started == nil || len(d.started) >= codexMaxItems {
				d.started = make(map[string]bool)
			}
			d.started[ev.ID] = true
			return dst
		}
	}
	delete(d.started, id.Str)
	ok := true
	switch status.Str {
	case "failed", "declined", "cancelled", "canceled", "error":
		ok = false
	}
	if exitCode.Type == gjson.Number && exitCode.Num != 0 {
		ok = false
	}
	if errv.Exists() && errv.Type != gjson.Null {
		ok = false
	}
	return append(dst, Event{Type: TypeToolResult, ID: ev.ID, Tool: ev.Tool, OK: ok, Output: ev.Input})
}

func (d *codexDecoder) turnCompleted(dst []Event, usage gjson.Result) []Event {
	var input, cached, write, output int64
	usage.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			input = jsonInt(v)
		case "cached_input_tokens":
			cached = jsonInt(v)
		case "cache_write_input_tokens":
			write = jsonInt(v)
		case "output_tokens":
			output = jsonInt(v)
		}
		return true
	})
	total := Usage{
		InputTokens:      nonNegative(input - cached - write),
		OutputTokens:     nonNegative(output),
		CacheReadTokens:  nonNegative(cached),
		CacheWriteTokens: nonNegative(write),
	}
	turn := subUsage(total, d.totals[d.thread])
	if d.totals == nil {
		d.totals = make(map[string]Usage)
	}
	d.totals[d.thread] = total
	d.open = false
	clear(d.started)
	return append(dst, Event{Type: TypeResult, OK: true, Text: d.text, Usage: &turn})
}

// SessionTotal implements SessionResumer.
func (d *codexDecoder) SessionTotal(id string) (Usage, bool) {
	u, ok := d.totals[id]
	return u, ok
}

// ResumeSession implements SessionResumer.
func (d *codexDecoder) ResumeSession(id string, total Usage) {
	if d.totals == nil {
		d.totals = make(map[string]Usage)
	}
	d.totals[id] = total
}

// End implements Decoder.
func (d *codexDecoder) End(dst []Event, exit Exit) []Event {
	if d.open {
		dst = append(dst, cutOffResult(exit, nil))
	}
	totals := d.totals
	*d = codexDecoder{open: true, totals: totals}
	return dst
}
