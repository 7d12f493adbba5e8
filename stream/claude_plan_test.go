package stream

import "testing"

// Claude Code 2.1.332 asks about ExitPlanMode with an empty input: the permission shows the plan
// of the call the model made, which is what the person decides on.
func TestClaudePlanPermissionInput(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"type":"assistant","message":{"content":[{"id":"toolu_1","input":{"plan":"Add a.txt"},"name":"ExitPlanMode","type":"tool_use"}],"id":"m","model":"claude","role":"assistant"},"session_id":"s"}`),
		[]byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"ExitPlanMode","input":{},"tool_use_id":"toolu_1"}}`),
		[]byte(`{"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"toolu_2"}}`),
	}
	var perms []Event
	for _, e := range decodeAll(t, NewClaude(), lines, Exit{Code: 143, Signal: "SIGTERM"}) {
		if e.Type == TypePermission {
			perms = append(perms, e)
		}
	}
	if len(perms) != 2 || string(perms[0].Input) != `{"plan":"Add a.txt"}` || string(perms[1].Input) != `{"command":"ls"}` {
		t.Errorf("permissions %s", serialize(perms))
	}
}
