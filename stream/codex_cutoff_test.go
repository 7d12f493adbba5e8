package stream

import "testing"

// A command Codex cut off by its own timeout never completes: the turn's end gives it a failed
// tool_result, so that no tool_use is left without one.
func TestCodexToolCutOff(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"make test","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"The command timed out."}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`))
	events := decodeAll(t, NewCodex(), lines, Exit{})
	var uses, results int
	for _, e := range events {
		switch {
		case e.Type == TypeToolUse:
			uses++
		case e.Type == TypeToolResult && e.ID == "item_1" && !e.OK && e.Tool == "command":
			results++
		}
	}
	if uses != 1 || results != 1 || events[len(events)-1].Type != TypeResult {
		t.Errorf("events %s", serialize(events))
	}
}
