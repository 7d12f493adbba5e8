package stream

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// What the app-server client reads: answers, the server's requests and its notifications.

// answer handles the answer to a request of ours.
func (c *CodexServer) answer(dst []Event, line []byte, id int64, result, errv gjson.Result) []Event {
	method, ok := c.calls[id]
	if !ok {
		return append(dst, Unparsed(line))
	}
	delete(c.calls, id)
	if errv.IsObject() {
		msg := method + " failed: " + errv.Get("message").Str
		switch method {
		case "initialize", "thread/start":
			c.fail(int(jsonInt(errv.Get("code"))), msg)
			return append(dst, fatalError(msg, 0))
		case "thread/resume":
			// The thread is gone: a new one instead, which is no failure of the run.
			c.resume = ""
			c.openThread()
			return append(dst, Event{Type: TypeError, Source: SourceAgent, Class: ClassSession, Message: msg + "; a new thread instead"})
		case "turn/start":
			c.turnOpen, c.steers, c.interrupt = false, nil, false
			ev := fatalError(msg, 0)
			return append(dst, ev, Event{Type: TypeResult, Text: ev.Message, Usage: &Usage{}})
		}
		return append(dst, agentWarning(msg))
	}
	switch method {
	case "initialize":
		c.out = append(c.out, []byte(`{"method":"initialized"}`+"\n"))
		c.phase = acpOpening
		c.openThread()
	case "thread/start", "thread/resume":
		tid := result.Get("thread.id")
		if tid.Type != gjson.String || tid.Str == "" {
			c.fail(0, method+" answered without a thread id: "+oneLine(string(line)))
			return append(dst, Unparsed(line))
		}
		if method == "thread/start" {
			c.total, c.atTurn = Usage{}, Usage{} // a new thread counts from nothing
		}
		c.threadID, c.phase, c.opened = jsonString(tid), acpReady, true
		dst = append(dst, Event{Type: TypeSession, SessionID: c.threadID, Model: jsonString(result.Get("model")), Cwd: c.cwd})
		held := c.held
		c.held = nil
		for _, p := range held {
			c.Prompt(p)
		}
	case "turn/start":
		if t := result.Get("turn.id"); t.Type == gjson.String {
			c.turnStarted(jsonString(t))
		}
	}
	return dst
}

// request handles a request of the server: the approvals are permissions, anything else is
// refused.
func (c *CodexServer) request(dst []Event, id gjson.Result, method string, params gjson.Result) []Event {
	raw := []byte(id.Raw)
	var tool string
	var input []byte
	switch method {
	case "item/commandExecution/requestApproval":
		tool = "Bash"
		input = AppendString([]byte(`{"command":`), params.Get("command").Str)
		input = AppendString(append(input, `,"cwd":`...), params.Get("cwd").Str)
	case "item/fileChange/requestApproval":
		tool = "Edit"
		if it := c.items[params.Get("itemId").Str]; it != nil && it.tool == "Edit" {
			input = append(input, it.input[:len(it.input)-1]...) // the changes, without its "}"
		} else {
			input = []byte(`{"grantRoot":`)
			input = AppendString(input, params.Get("grantRoot").Str)
		}
	default:
		b := append([]byte(`{"id":`), raw...)
		b = AppendString(append(b, `,"error":{"code":-32601,"message":`...), "method not found: agt offers no "+method)
		c.out = append(c.out, append(b, "}}\n"...))
		return dst
	}
	input = AppendString(append(input, `,"reason":`...), params.Get("reason").Str)
	input = append(input, '}')
	key := jsonString(id)
	if key == "" {
		key = strings.Clone(id.Raw) // kept: the line's buffer is reused
	}
	if c.asks == nil || len(c.asks) >= codexServerMax {
		c.asks = make(map[string][]byte)
	}
	c.asks[key] = raw
	return append(dst, Event{Type: TypePermission, ID: key, Tool: tool, Input: input, Options: codexDecisions})
}

// notification handles a notification of the server.
func (c *CodexServer) notification(dst []Event, line []byte, method string, params gjson.Result) []Event {
	switch method {
	case "item/started", "item/completed":
		return c.item(dst, params.Get("item"), method == "item/completed")
	case "turn/started":
		if t := params.Get("turn.id"); t.Type == gjson.String {
			c.turnStarted(jsonString(t))
		}
		return dst
	case "thread/tokenUsage/updated":
		t := params.Get("tokenUsage.total")
		c.total = Usage{
			InputTokens:     nonNegative(jsonInt(t.Get("inputTokens")) - jsonInt(t.Get("cachedInputTokens"))),
			OutputTokens:    nonNegative(jsonInt(t.Get("outputTokens"))),
			CacheReadTokens: nonNegative(jsonInt(t.Get("cachedInputTokens"))),
		}
		c.total.CacheWriteTokens = nonNegative(jsonInt(t.Get("cacheWriteInputTokens")))
		return dst
	case "error":
		msg := params.Get("error.message").Str
		if params.Get("willRetry").Type == gjson.True {
			c.retries++
			return append(dst, retryNotice(msg, 0, c.retries))
		}
		return append(dst, fatalError(msg, 0))
	case "turn/completed":
		return c.turnCompleted(dst, params.Get("turn"))
	}
	if !strings.Contains(method, "/") && method != "warning" {
		return append(dst, Unparsed(line))
	}
	return dst // deltas, status changes and the rest: the items and turn/completed say it all
}

// item turns a thread item that started or completed into events.
func (c *CodexServer) item(dst []Event, it gjson.Result, completed bool) []Event {
	id := jsonString(it.Get("id"))
	switch typ := it.Get("type").Str; typ {
	case "agentMessage":
		if completed {
			c.last = jsonString(it.Get("text"))
			return append(dst, Event{Type: TypeText, Text: c.last})
		}
		return dst
	case "reasoning":
		var b strings.Builder
		it.Get("summary").ForEach(func(_, s gjson.Result) bool {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(s.Str)
			return b.Len() < acpMaxText
		})
		if completed && b.Len() > 0 {
			return append(dst, Event{Type: TypeText, Text: b.String(), Thought: true})
		}
		return dst
	case "commandExecution", "fileChange", "mcpToolCall":
		t := c.tool(id, typ, it)
		if !t.used {
			t.used = true
			dst = append(dst, Event{Type: TypeToolUse, ID: id, Tool: t.tool, Input: t.input})
		}
		if !completed {
			return dst
		}
		c.itemBytes -= len(t.input) + len(t.tool)
		delete(c.items, id)
		status := it.Get("status").Str
		ok := status == "completed"
		var output []byte
		switch typ {
		case "commandExecution":
			ok = ok && jsonInt(it.Get("exitCode")) == 0
			output = AppendString(nil, it.Get("aggregatedOutput").Str)
		case "fileChange":
			var paths []string
			it.Get("changes").ForEach(func(_, ch gjson.Result) bool {
				paths = append(paths, ch.Get("kind.type").Str+" "+ch.Get("path").Str)
				return len(paths) < 64
			})
			output = AppendString(nil, strings.Join(paths, ", "))
		case "mcpToolCall":
			output = AppendString(nil, it.Get("error.message").Str)
			it.Get("result.content").ForEach(func(_, b gjson.Result) bool {
				output = AppendString(nil, b.Get("text").Str)
				return false
			})
			ok = ok && !it.Get("error").IsObject()
		}
		return append(dst, Event{Type: TypeToolResult, ID: id, Tool: t.tool, OK: ok, Output: output})
	}
	return dst
}

// tool returns the state of a tool item, made on first sight.
func (c *CodexServer) tool(id, typ string, it gjson.Result) *codexServerItem {
	if t := c.items[id]; t != nil {
		return t
	}
	if c.items == nil || len(c.items) >= codexServerMax || c.itemBytes >= codexServerKept {
		c.items, c.itemBytes = make(map[string]*codexServerItem), 0
	}
	t := &codexServerItem{}
	switch typ {
	case "commandExecution":
		t.tool = "Bash"
		in := AppendString([]byte(`{"command":`), it.Get("command").Str)
		t.input = append(AppendString(append(in, `,"cwd":`...), it.Get("cwd").Str), '}')
	case "fileChange":
		t.tool = "Edit"
		in := AppendString([]byte(`{"file_path":`), it.Get("changes.0.path").Str)
		in = append(in, `,"changes":[`...)
		it.Get("changes").ForEach(func(i, ch gjson.Result) bool {
			if i.Int() > 0 {
				in = append(in, ',')
			}
			in = AppendString(append(in, `{"path":`...), ch.Get("path").Str)
			in = AppendString(append(in, `,"kind":`...), ch.Get("kind.type").Str)
			in = append(in, '}')
			return i.Int() < 63
		})
		t.input = append(in, "]}"...)
	case "mcpToolCall":
		t.tool = it.Get("server").Str + "." + it.Get("tool").Str
		t.input = jsonRaw(it.Get("arguments"))
		if !json.Valid(t.input) || len(t.input) == 0 {
			t.input = json.RawMessage(`{}`)
		}
	}
	c.items[id] = t
	c.itemBytes += len(t.input) + len(t.tool)
	return t
}

// turnCompleted ends the turn with its result.
func (c *CodexServer) turnCompleted(dst []Event, turn gjson.Result) []Event {
	status := turn.Get("status").Str
	ev := Event{Type: TypeResult, OK: status == "completed", DurationMS: jsonInt(turn.Get("durationMs"))}
	u := c.total
	u.InputTokens = nonNegative(u.InputTokens - c.atTurn.InputTokens)
	u.OutputTokens = nonNegative(u.OutputTokens - c.atTurn.OutputTokens)
	u.CacheReadTokens = nonNegative(u.CacheReadTokens - c.atTurn.CacheReadTokens)
	u.CacheWriteTokens = nonNegative(u.CacheWriteTokens - c.atTurn.CacheWriteTokens)
	ev.Usage = &u
	switch {
	case ev.OK:
		ev.Text = c.last
	case turn.Get("error.message").Str != "":
		ev.Text = jsonString(turn.Get("error.message"))
		if status == "failed" {
			dst = append(dst, fatalError(ev.Text, 0))
		}
	default:
		ev.Text = status
	}
	// Calls the turn started and never finished (cut by a timeout, interrupted): each gets a
	// failed result, so that no tool_use is left without one.
	for id, t := range c.items {
		if t.used {
			dst = append(dst, Event{Type: TypeToolResult, ID: id, Tool: t.tool, Output: AppendString(nil, "the turn ended before the tool did ("+status+")")})
		}
	}
	clear(c.items)
	c.itemBytes = 0
	c.turnOpen, c.turnID, c.last, c.atTurn = false, "", "", c.total
	c.steers, c.interrupt = nil, false
	return append(dst, ev)
}
