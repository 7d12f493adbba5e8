package stream

import (
	"encoding/json"
	"strconv"
)

// ClaudeInput writes what agt says to Claude Code on its stdin (claude -p --input-format
// stream-json --permission-prompt-tool stdio): user messages, answers to its can_use_tool
// requests (control_response) and interrupts (control_request). It is pure: each call returns
// the line to write, with its newline, and never does I/O. What Claude writes back is read by
// the Claude decoder (NewClaude), which turns a can_use_tool request into a permission event
// whose id, input and options an answer repeats here.
//
// The shapes are those of the Claude Agent SDK, checked against the CLI (the fixtures
// stdin_stream_json_two_turns_can_use_tool.txt and stdin_interrupt_control_request.txt).
type ClaudeInput struct {
	interrupts int // interrupts sent, for their request ids
}

// Prompt is a user message: the next turn.
func (c *ClaudeInput) Prompt(text string) []byte {
	b := []byte(`{"type":"user","message":{"role":"user","content":`)
	b = AppendString(b, text)
	return append(b, `},"parent_tool_use_id":null,"session_id":""}`+"\n"...)
}

// Allow answers the can_use_tool request id: the tool runs with input (the request's own,
// unchanged). When always is set and the request came with permission suggestions, they are
// taken for the rest of the session, so that the like is not asked again.
func (c *ClaudeInput) Allow(id string, input, suggestions json.RawMessage, always bool) []byte {
	b := controlResponse(id)
	b = append(b, `,"response":{"behavior":"allow","updatedInput":`...)
	if len(input) > 0 && json.Valid(input) {
		b = AppendCompact(b, input)
	} else {
		b = append(b, "{}"...)
	}
	if rules := forSession(suggestions); always && rules != nil {
		b = append(b, `,"updatedPermissions":`...)
		b = append(b, rules...)
	}
	return append(b, "}}}\n"...)
}

// Deny answers the can_use_tool request id: the tool does not run, and the model is told
// message. The turn goes on.
func (c *ClaudeInput) Deny(id, message string) []byte {
	b := controlResponse(id)
	b = append(b, `,"response":{"behavior":"deny","message":`...)
	b = AppendString(b, message)
	return append(b, `,"interrupt":false}}}`+"\n"...)
}

// Interrupt cancels the running turn, which ends with a result of subtype
// error_during_execution. Each has a request id of its own: agt-interrupt-1, -2, …
func (c *ClaudeInput) Interrupt() []byte {
	c.interrupts++
	b := AppendString([]byte(`{"type":"control_request","request_id":`), "agt-interrupt-"+strconv.Itoa(c.interrupts))
	return append(b, `,"request":{"subtype":"interrupt"}}`+"\n"...)
}

func controlResponse(id string) []byte {
	return AppendString([]byte(`{"type":"control_response","response":{"subtype":"success","request_id":`), id)
}

// forSession returns Claude's permission suggestions with every destination made "session":
// as suggested they may say "localSettings", which writes the rule into the project's
// .claude/settings.local.json (in the agent's workspace, for good). Nil when there are none.
func forSession(suggestions json.RawMessage) []byte {
	var sugg []map[string]any
	if len(suggestions) == 0 || json.Unmarshal(suggestions, &sugg) != nil || len(sugg) == 0 {
		return nil
	}
	for _, s := range sugg {
		if _, ok := s["destination"]; ok {
			s["destination"] = "session"
		}
	}
	b, err := json.Marshal(sugg)
	if err != nil {
		return nil
	}
	return b
}
