package stream

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// ACP agents describe a tool call each in their own way: claude-agent-acp names Claude's tool
// (Bash, Edit) and sends its input; gemini sends only a kind ("execute") and a title that is the
// command; opencode a kind, a title and its own input ({"command"} or {"filePath"}). The client
// normalises them, so that one agt.toml rule (Bash(mkdir *), Edit(src/**)) matches the same tool
// whatever the agent:
//
//   - the tool is the agent's own name for it when it gives one, else the Claude tool its kind
//     stands for (acpKindTools), else its title;
//   - the input is the agent's raw input, with the key a rule reads added when it is missing:
//     command (from the title) for Bash, file_path (from filePath, path or the first location)
//     for the file tools; a call with no input at all has {"title"};
//   - the output is text: the raw output when it is a string or holds one ({"output": …}), else
//     the text of the content blocks (a diff by its path), else "".

// acpKindTools are the Claude tools that ACP's tool kinds stand for.
var acpKindTools = map[string]string{
	"execute": "Bash",
	"edit":    "Edit",
	"read":    "Read",
	"delete":  "Delete",
	"move":    "Move",
	"search":  "Grep",
	"fetch":   "WebFetch",
}

// tool returns the state of the tool call a ToolCall or ToolCallUpdate names, made on first
// sight (a permission request can be the first), with the fields it brings patched in.
func (a *ACP) tool(u gjson.Result) (*acpTool, string) {
	id := jsonString(u.Get("toolCallId"))
	t := a.tools[id]
	if t == nil {
		if a.tools == nil || len(a.tools) >= acpMaxTools || a.toolBytes >= acpMaxKept {
			a.tools, a.toolBytes = make(map[string]*acpTool), 0
		}
		t = &acpTool{}
		a.tools[id] = t
	}
	before := t.size()
	defer func() { a.toolBytes += t.size() - before }()
	if k := u.Get("kind"); k.Type == gjson.String && k.Str != "" {
		t.kind = strings.Clone(k.Str)
	}
	if t.used {
		return t, id // the tool_use reports the call as it stood when it started
	}
	if n := u.Get("name"); n.Type == gjson.String && n.Str != "" {
		t.name = strings.Clone(n.Str)
	} else if n := u.Get("_meta.claudeCode.toolName"); t.name == "" && n.Type == gjson.String {
		t.name = strings.Clone(n.Str)
	}
	if title := u.Get("title"); title.Type == gjson.String && title.Str != "" {
		t.title = strings.Clone(title.Str)
	}
	if in := u.Get("rawInput"); in.IsObject() && in.Raw != "{}" {
		t.input = jsonRaw(in)
	}
	if p := u.Get("locations.0.path"); p.Type == gjson.String && p.Str != "" {
		t.path = strings.Clone(p.Str)
	}
	return t, id
}

// size is what t holds, in bytes.
func (t *acpTool) size() int {
	return len(t.name) + len(t.title) + len(t.kind) + len(t.path) + len(t.input)
}

// forgetTool forgets the call id.
func (a *ACP) forgetTool(id string) {
	if t, ok := a.tools[id]; ok {
		a.toolBytes -= t.size()
		delete(a.tools, id)
	}
}

// forgetAsk forgets the permission request id.
func (a *ACP) forgetAsk(id string) {
	if ask, ok := a.asks[id]; ok {
		a.askBytes -= len(ask.options) + len(ask.rawID) + len(ask.tool)
		delete(a.asks, id)
	}
}

// toolName is the tool a call reports: see the top of this file.
func (t *acpTool) toolName() string {
	switch {
	case t.name != "":
		return t.name
	case acpKindTools[t.kind] != "":
		return acpKindTools[t.kind]
	case t.title != "":
		return t.title
	}
	return t.kind
}

// toolInput is the input a call reports: see the top of this file.
func (t *acpTool) toolInput() json.RawMessage {
	in := t.input
	switch t.toolName() {
	case "Bash":
		if t.title != "" && gjson.GetBytes(in, "command").Type != gjson.String {
			in = withKey(in, "command", t.title)
		}
	case "Edit", "Write", "Read", "Delete", "Move", "MultiEdit":
		if gjson.GetBytes(in, "file_path").Type == gjson.String {
			break
		}
		path := t.path
		for _, k := range []string{"filePath", "path"} {
			if p := gjson.GetBytes(in, k); p.Type == gjson.String && p.Str != "" {
				path = p.Str
				break
			}
		}
		if path != "" {
			in = withKey(in, "file_path", path)
		}
	}
	if in == nil && t.title != "" {
		in = stringObject("title", t.title)
	}
	return in
}

// withKey returns the JSON object obj (nil for an empty one) with the string key: value added
// in front.
func withKey(obj json.RawMessage, key, value string) json.RawMessage {
	b := AppendString(json.RawMessage{'{'}, key)
	b = AppendString(append(b, ':'), value)
	rest := bytes.TrimSpace(obj)
	if len(rest) < 2 || rest[0] != '{' {
		return append(b, '}')
	}
	rest = bytes.TrimSpace(rest[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// acpOutput is a finished call's output as a JSON string: see the top of this file.
func acpOutput(u gjson.Result) json.RawMessage {
	raw := u.Get("rawOutput")
	if raw.Type == gjson.String {
		return AppendString(nil, raw.Str)
	}
	for _, k := range []string{"output", "stdout", "error"} {
		if o := raw.Get(k); raw.IsObject() && o.Type == gjson.String {
			return AppendString(nil, o.Str)
		}
	}
	var text strings.Builder
	u.Get("content").ForEach(func(_, c gjson.Result) bool {
		var s string
		switch c.Get("type").Str {
		case "content":
			s = c.Get("content.text").Str
		case "diff":
			s = "diff " + c.Get("path").Str
		}
		if s != "" && text.Len() < acpMaxText {
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(s)
		}
		return true
	})
	if text.Len() == 0 && raw.Exists() && raw.Type != gjson.Null {
		return AppendString(nil, raw.Raw) // an object of the agent's own: its JSON, as text
	}
	return AppendString(nil, text.String())
}
