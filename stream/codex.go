package stream

import (
	"encoding/json"
	"maps"
	"path"
	"slices"
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
//   - tool items → tool_use at item.started (the first one that says what it does: web_search
//     starts twice, first with an empty query) and tool_result at item.completed (with a
//     tool_use first when no start was seen). The id is the item's first "id" (item_N): a
//     web_search item carries a second one, the provider's search id, which encoding/json would
//     have picked. Per item type:
//     command_execution → tool "command", input {"command"}, output the aggregated_output as a
//     string, ok when exit_code is 0 and status completed;
//     file_change → tool "file_change", input {"changes":[{path,kind}]}, output a summary
//     ("add hello.txt, update b.go"), ok when status is completed;
//     mcp_tool_call → tool "<server>.<tool>", input the arguments, output the text of
//     result.content or the error's message, ok when status is completed without error;
//     web_search → tool "web_search", input {"query"}, output the action as sent;
//     collab_tool_call → tool as named, input and output the item as sent;
//   - top-level error → a warning: Codex sends errors it recovers from this way; a retry
//     notice ("Reconnecting... 2/5 (…)") is a warning with attempt 2, its status and class read
//     from the text; only turn.failed ends a turn;
//   - turn.completed → result; turn.failed → a fatal error (classified from its message: Codex
//     quotes the HTTP status, "Missing environment variable" is auth), then a failed result.
//
// item.updated, turn.started, item.plan.delta, request_user_input and unknown types and item
// types are skipped. Stderr serves the failure: "no rollout found for thread id" (resume of an
// unknown thread) is session; exit code 2 is a usage error (clap), config.
//
// turn.completed reports usage cumulative for the thread: the result carries the difference from
// the previous turn.completed of the same thread seen by this decoder. Those totals outlive End,
// so a decoder reused for the resumed process (codex exec resume) gets per-turn figures; a fresh
// one learns where the thread stood from ResumeSession, or reports the thread's total.
// input_tokens counts cached tokens in Codex's figures: the event's input_tokens is the uncached
// part. Codex reports no cost.
//
// One process runs one turn, from its start: a process that exits with no turn.completed or
// turn.failed (SIGINT, a crash, a resume of an unknown thread) gets a failed result in End.
func NewCodex() Decoder { return &codexDecoder{open: true} }

type codexDecoder struct {
	open     bool              // the turn is under way
	thread   string            // current thread id
	text     string            // last agent message of the turn, the result's text
	started  map[string]string // item id → tool, of the items whose tool_use was sent
	totals   map[string]Usage
	waits    int // retry notices without a count in this turn
	evidence     // what the run showed of why it may fail; DecodeStderr records stderr
}

// codexMaxItems bounds the started items kept for completions that never come.
const codexMaxItems = 4096

// Decode implements Decoder.
func (d *codexDecoder) Decode(dst []Event, line []byte) []Event {
	n := len(dst)
	dst = d.decode(dst, line)
	d.evidence.sawEvents(dst[n:])
	return dst
}

func (d *codexDecoder) decode(dst []Event, line []byte) []Event {
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
		d.text, d.waits = "", 0
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
		if attempt, ok := codexRetry(message.Str); ok {
			if attempt == 0 {
				// "Reconnecting... waiting for network (…)" carries no count: number them.
				d.waits++
				attempt = d.waits
			}
			return append(dst, retryNotice(jsonString(message), 0, attempt))
		}
		return append(dst, agentWarning(jsonString(message)))
	case "turn.completed":
		return d.turnCompleted(dst, usage)
	case "turn.failed":
		text := jsonString(errv.Get("message"))
		if text == "" {
			text = "turn failed"
		}
		d.open = false
		dst = d.unfinished(dst, "the turn failed before the tool ended")
		ev := fatalError(text, 0)
		return append(dst, ev, Event{Type: TypeResult, Text: ev.Message})
	case "":
		return append(dst, Unparsed(line))
	}
	return dst
}

// codexRetry reads a retry notice: N of "Reconnecting... N/M (reason)", 0 for one without a
// count ("Reconnecting... waiting for network (…)"); ok false for any other message.
func codexRetry(msg string) (n int, ok bool) {
	rest, ok := strings.CutPrefix(msg, "Reconnecting...")
	if !ok {
		return 0, false
	}
	rest = strings.TrimLeft(rest, " ")
	for i := 0; i < len(rest) && i < 6 && rest[i] >= '0' && rest[i] <= '9'; i++ {
		n = n*10 + int(rest[i]-'0')
	}
	return n, true
}

// codexItem holds the fields of an item, read in a single pass.
type codexItem struct {
	id, typ, text, status, exitCode, errv, tool, server        gjson.Result
	command, output, changes, arguments, result, query, action gjson.Result
}

func (d *codexDecoder) item(dst []Event, item gjson.Result, completed bool) []Event {
	switch item.Get("type").Str { // before reading every field: most items are skipped
	case "agent_message", "error", "command_execution", "file_change", "web_search", "mcp_tool_call", "collab_tool_call":
	default:
		return dst
	}
	var it codexItem
	item.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			if !it.id.Exists() { // web_search repeats "id": the first is the item's
				it.id = v
			}
		case "type":
			it.typ = v
		case "text":
			it.text = v
		case "message":
			if !it.text.Exists() {
				it.text = v
			}
		case "status":
			it.status = v
		case "exit_code":
			it.exitCode = v
		case "error":
			it.errv = v
		case "tool":
			it.tool = v
		case "server":
			it.server = v
		case "command":
			it.command = v
		case "aggregated_output":
			it.output = v
		case "changes":
			it.changes = v
		case "arguments":
			it.arguments = v
		case "result":
			it.result = v
		case "query":
			it.query = v
		case "action":
			it.action = v
		}
		return true
	})
	switch it.typ.Str {
	case "agent_message":
		if !completed || it.text.Str == "" {
			return dst
		}
		d.text = jsonString(it.text)
		return append(dst, Event{Type: TypeText, Text: d.text})
	case "error":
		if !completed {
			return dst
		}
		return append(dst, agentWarning(jsonString(it.text)))
	}
	_, seen := d.started[it.id.Str]
	if seen && !completed {
		return dst // web_search starts twice
	}
	if !completed && it.typ.Str == "web_search" && it.query.Str == "" {
		return dst // the second start says what it searches
	}
	use := Event{Type: TypeToolUse, ID: jsonString(it.id)}
	use.Tool, use.Input = codexCall(&it, item)
	if !seen {
		dst = append(dst, use)
		if !completed {
			if d.started == nil || len(d.started) >= codexMaxItems {
				d.started = make(map[string]string)
			}
			d.started[use.ID] = use.Tool
			return dst
		}
	}
	delete(d.started, it.id.Str)
	res := Event{Type: TypeToolResult, ID: use.ID, Tool: use.Tool, OK: true}
	switch it.status.Str {
	case "failed", "declined", "cancelled", "canceled", "error", "in_progress":
		res.OK = false
	}
	if it.errv.Exists() && it.errv.Type != gjson.Null {
		res.OK = false
	}
	switch it.typ.Str {
	case "command_execution":
		exited0 := it.exitCode.Type == gjson.Number && it.exitCode.Num == 0
		res.OK = res.OK && it.status.Str == "completed" && exited0
		if it.output.Exists() {
			res.Output = stringValue(it.output.Str)
		}
	case "file_change":
		res.OK = res.OK && it.status.Str == "completed"
		res.Output = stringValue(codexChangeSummary(it.changes))
	case "mcp_tool_call":
		res.OK = res.OK && it.status.Str == "completed"
		res.Output = codexMCPOutput(&it)
	case "web_search":
		res.Output = jsonRaw(it.action)
	default: // collab_tool_call
		res.Output = use.Input
	}
	return append(dst, res)
}

// codexCall returns the tool name and input of a tool item.
func codexCall(it *codexItem, item gjson.Result) (string, json.RawMessage) {
	switch it.typ.Str {
	case "command_execution":
		return "command", stringObject("command", it.command.Str)
	case "file_change":
		b := append(json.RawMessage(nil), `{"changes":[`...)
		i := 0
		it.changes.ForEach(func(_, c gjson.Result) bool {
			if i > 0 {
				b = append(b, ',')
			}
			i++
			b = AppendString(append(b, `{"path":`...), c.Get("path").Str)
			b = AppendString(append(b, `,"kind":`...), c.Get("kind").Str)
			b = append(b, '}')
			return true
		})
		return "file_change", append(b, "]}"...)
	case "mcp_tool_call":
		if it.server.Str == "" {
			return strings.Clone(it.tool.Str), jsonRaw(it.arguments)
		}
		return it.server.Str + "." + it.tool.Str, jsonRaw(it.arguments)
	case "web_search":
		return "web_search", stringObject("query", it.query.Str)
	}
	name := it.typ.Str
	if it.tool.Type == gjson.String && it.tool.Str != "" {
		name = it.tool.Str // collab_tool_call names the tool it called
	}
	return strings.Clone(name), jsonRaw(item)
}

// codexChangeSummary says what a file_change did: "add hello.txt, update b.go" (base names).
func codexChangeSummary(changes gjson.Result) string {
	var b strings.Builder
	changes.ForEach(func(_, c gjson.Result) bool {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		kind := c.Get("kind").Str
		if kind == "" {
			kind = "change"
		}
		b.WriteString(kind)
		if p := c.Get("path").Str; p != "" {
			b.WriteByte(' ')
			b.WriteString(path.Base(p))
		}
		return true
	})
	return b.String()
}

// codexMCPOutput is the text of an MCP call's result, its text blocks joined, or its error's
// message, as a JSON string; nil when the item has neither.
func codexMCPOutput(it *codexItem) json.RawMessage {
	if msg := it.errv.Get("message"); msg.Type == gjson.String {
		return stringValue(msg.Str)
	}
	if it.errv.Type == gjson.String {
		return stringValue(it.errv.Str)
	}
	content := it.result.Get("content")
	if !content.IsArray() {
		return nil
	}
	var b strings.Builder
	content.ForEach(func(_, block gjson.Result) bool {
		if text := block.Get("text"); text.Type == gjson.String {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(text.Str)
		}
		return true
	})
	return stringValue(b.String())
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
	dst = d.unfinished(dst, "the turn ended before the tool did (cut off by its timeout?)")
	return append(dst, Event{Type: TypeResult, OK: true, Text: d.text, Usage: &turn})
}

// unfinished gives every tool the turn started and never completed (a command Codex cut off by
// its own timeout has no item.completed) a failed tool_result saying why, so that no tool_use is
// left without one.
func (d *codexDecoder) unfinished(dst []Event, why string) []Event {
	for _, id := range slices.Sorted(maps.Keys(d.started)) {
		dst = append(dst, Event{Type: TypeToolResult, ID: id, Tool: d.started[id], Output: stringValue(why)})
	}
	clear(d.started)
	return dst
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

// codexExitMeaning names what Codex's exit codes stand for: 2 is clap's usage error.
func codexExitMeaning(code int) (exitMeaning, bool) {
	if code == 2 {
		return exitMeaning{class: ClassConfig, text: "usage error"}, true
	}
	return exitMeaning{}, false
}

// End implements Decoder.
func (d *codexDecoder) End(dst []Event, exit Exit) ([]Event, Failure) {
	if d.open {
		dst = d.unfinished(dst, "the run ended before the tool did ("+exitText(exit)+")")
		dst = append(dst, cutOffResult(exit, codexExitMeaning))
	}
	f := d.evidence.failure(exit, codexExitMeaning)
	totals := d.totals
	*d = codexDecoder{open: true, totals: totals}
	return dst, f
}
