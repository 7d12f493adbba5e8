package mockmodel

// Anthropic Messages: the API of Claude Code and opencode.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type anthropicAPI struct{}

func (anthropicAPI) name() string { return "anthropic" }

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`  // of a tool_result: a string or blocks
	IsError bool            `json:"is_error"` // of a tool_result
}

// anthropicText reads content that is a string or a list of blocks as its texts.
func anthropicText(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []anthropicBlock
	json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

func (anthropicAPI) parse(r *http.Request, body []byte) *conv {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	c := &conv{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Name)
		if c.shell == "" && (t.Name == "Bash" || t.Name == "bash") {
			c.shell = t.Name
		}
		// Claude Code 2.1.332 defers ExitPlanMode behind ToolSearch: a model may call it still.
		c.exitPlan = c.exitPlan || t.Name == "ExitPlanMode" || t.Name == "ToolSearch"
	}
	for _, msg := range req.Messages {
		if msg.Role != "user" {
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(msg.Content, &blocks) != nil {
			c.userText(anthropicText(msg.Content))
			continue
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_result":
				c.result(strings.Join(anthropicText(b.Content), "\n"), b.IsError)
			}
		}
		c.userText(texts)
	}
	return c
}

func (anthropicAPI) writeError(w http.ResponseWriter, c *conv, p plan, seq int) {
	var typ, msg string
	switch p.errKind {
	case "auth":
		typ, msg = "authentication_error", "invalid x-api-key"
	case "rate":
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case "server":
		typ, msg = "api_error", "Internal server error"
	case "model":
		typ, msg = "not_found_error", "model: "+c.model
	}
	w.Header().Set("request-id", fmt.Sprintf("req_mock_%d", seq))
	writeJSON(w, p.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg},
		"request_id": fmt.Sprintf("req_mock_%d", seq)})
}

// anthropicAnswer writes a Messages answer: SSE events when streamed, else one JSON message.
type anthropicAnswer struct {
	s       *sse // nil: not streamed
	w       http.ResponseWriter
	c       *conv
	seq     int
	open    bool   // a text block is open
	content []any  // the blocks, for an answer not streamed
	whole   string // the text so far, for an answer not streamed
	stop    string
}

func (anthropicAPI) answer(w http.ResponseWriter, c *conv, seq int) answerWriter {
	w.Header().Set("request-id", fmt.Sprintf("req_mock_%d", seq))
	a := &anthropicAnswer{w: w, c: c, seq: seq, stop: "end_turn"}
	if c.stream {
		a.s = newSSE(w)
		a.s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": fmt.Sprintf("msg_mock_%d", seq), "type": "message", "role": "assistant", "model": c.model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
		a.s.event("ping", map[string]any{"type": "ping"})
	}
	return a
}

func (a *anthropicAnswer) text(t string) {
	if a.s == nil {
		a.whole += t
		return
	}
	if !a.open {
		a.open = true
		a.s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
	}
	a.s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": t}})
}

func (a *anthropicAnswer) tool(cmd string) {
	a.call(a.c.shell, map[string]any{"command": cmd, "description": "Run a command"})
}

// call calls the tool name with input.
func (a *anthropicAnswer) call(name string, input map[string]any) {
	a.stop = "tool_use"
	id := fmt.Sprintf("toolu_mock_%d", a.seq)
	if a.s == nil {
		a.content = append(a.content, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
		return
	}
	in, _ := json.Marshal(input)
	a.s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})
	a.s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
	a.s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
}

func (a *anthropicAnswer) end() {
	if a.s == nil {
		content := a.content
		if a.whole != "" {
			content = append([]any{map[string]any{"type": "text", "text": a.whole}}, content...)
		}
		writeJSON(a.w, 200, map[string]any{"id": fmt.Sprintf("msg_mock_%d", a.seq), "type": "message", "role": "assistant",
			"model": a.c.model, "content": content, "stop_reason": a.stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10}})
		return
	}
	if a.open {
		a.s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	a.s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	a.s.event("message_stop", map[string]any{"type": "message_stop"})
}
