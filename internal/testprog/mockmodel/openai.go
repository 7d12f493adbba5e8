package mockmodel

// OpenAI Responses: the API of Codex.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

type openaiAPI struct{}

func (openaiAPI) name() string { return "openai" }

// openaiText reads message content or a tool output (a string, or a list of parts) as its texts.
func openaiText(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

func (openaiAPI) parse(r *http.Request, body []byte) *conv {
	var req struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  json.RawMessage `json:"input"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	c := &conv{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		c.tools = append(c.tools, name)
		if c.shell == "" && (name == "exec_command" || name == "shell_command" || name == "shell") {
			c.shell = name
		}
		c.patch = c.patch || name == "apply_patch"
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(req.Input, &items) != nil {
		c.userText(openaiText(req.Input))
		return c
	}
	for _, it := range items {
		switch {
		case strings.HasSuffix(it.Type, "_call_output"):
			c.result(strings.Join(openaiText(it.Output), "\n"), false)
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			c.userText(openaiText(it.Content))
		}
	}
	return c
}

func (openaiAPI) writeError(w http.ResponseWriter, c *conv, p plan, seq int) {
	var typ, msg string
	var code any
	switch p.errKind {
	case "auth":
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided: test-key. You can find your API key at https://platform.openai.com/account/api-keys."
	case "rate":
		typ, code, msg = "tokens", "rate_limit_exceeded", "Rate limit reached for "+c.model+" in organization org-mock on tokens per min (TPM): Limit 1000, Used 1000, Requested 100. Please try again in 1s."
	case "server":
		typ, msg = "server_error", "The server had an error while processing your request. Sorry about that!"
	case "model":
		typ, code, msg = "invalid_request_error", "model_not_found", "The model `"+c.model+"` does not exist or you do not have access to it."
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_mock_%d", seq))
	writeJSON(w, p.status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

// openaiAnswer writes a Responses answer as SSE (Codex always streams).
type openaiAnswer struct {
	s      *sse
	c      *conv
	seq    int
	n      int // sequence_number of the next event
	open   bool
	whole  strings.Builder
	output []any
}

func (openaiAPI) answer(w http.ResponseWriter, c *conv, seq int) answerWriter {
	w.Header().Set("x-request-id", fmt.Sprintf("req_mock_%d", seq))
	a := &openaiAnswer{s: newSSE(w), c: c, seq: seq}
	a.event("response.created", map[string]any{"response": a.response("in_progress", nil)})
	a.event("response.in_progress", map[string]any{"response": a.response("in_progress", nil)})
	return a
}

func (a *openaiAnswer) event(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = a.n
	a.n++
	a.s.event(typ, fields)
}

func (a *openaiAnswer) response(status string, usage any) map[string]any {
	return map[string]any{"id": fmt.Sprintf("resp_mock_%d", a.seq), "object": "response", "created_at": time.Now().Unix(),
		"status": status, "model": a.c.model, "output": append([]any{}, a.output...), "usage": usage}
}

func (a *openaiAnswer) itemID() string { return fmt.Sprintf("msg_mock_%d", a.seq) }

func (a *openaiAnswer) text(t string) {
	if !a.open {
		a.open = true
		a.event("response.output_item.added", map[string]any{"output_index": len(a.output), "item": map[string]any{
			"id": a.itemID(), "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		a.event("response.content_part.added", map[string]any{"item_id": a.itemID(), "output_index": len(a.output),
			"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	}
	a.whole.WriteString(t)
	a.event("response.output_text.delta", map[string]any{"item_id": a.itemID(), "output_index": len(a.output),
		"content_index": 0, "delta": t})
}

func (a *openaiAnswer) tool(cmd string) {
	args, _ := json.Marshal(map[string]any{"cmd": cmd})
	switch a.c.shell {
	case "shell_command":
		args, _ = json.Marshal(map[string]any{"command": cmd})
	case "shell":
		args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
	}
	item := map[string]any{"id": fmt.Sprintf("fc_mock_%d", a.seq), "type": "function_call", "status": "completed",
		"call_id": fmt.Sprintf("call_mock_%d", a.seq), "name": a.c.shell, "arguments": string(args)}
	a.event("response.output_item.added", map[string]any{"output_index": len(a.output), "item": item})
	a.event("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": len(a.output),
		"arguments": string(args)})
	a.event("response.output_item.done", map[string]any{"output_index": len(a.output), "item": item})
	a.output = append(a.output, item)
}

// patchText adds one file, agt-patch.txt.
const patchText = "*** Begin Patch\n*** Add File: agt-patch.txt\n+agt-patch-ok\n*** End Patch\n"

// applyPatch calls Codex's apply_patch, a custom (freeform) tool.
func (a *openaiAnswer) applyPatch() {
	item := map[string]any{"id": fmt.Sprintf("ctc_mock_%d", a.seq), "type": "custom_tool_call", "status": "completed",
		"call_id": fmt.Sprintf("call_mock_%d", a.seq), "name": "apply_patch", "input": patchText}
	a.event("response.output_item.added", map[string]any{"output_index": len(a.output), "item": item})
	a.event("response.output_item.done", map[string]any{"output_index": len(a.output), "item": item})
	a.output = append(a.output, item)
}

func (a *openaiAnswer) end() {
	if a.open {
		part := map[string]any{"type": "output_text", "text": a.whole.String(), "annotations": []any{}}
		i := len(a.output)
		a.event("response.output_text.done", map[string]any{"item_id": a.itemID(), "output_index": i, "content_index": 0, "text": a.whole.String()})
		a.event("response.content_part.done", map[string]any{"item_id": a.itemID(), "output_index": i, "content_index": 0, "part": part})
		item := map[string]any{"id": a.itemID(), "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		a.event("response.output_item.done", map[string]any{"output_index": i, "item": item})
		a.output = append(a.output, item)
	}
	a.event("response.completed", map[string]any{"response": a.response("completed", map[string]any{
		"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110})})
}
