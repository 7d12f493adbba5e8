package stream

import (
	"fmt"
	"strings"
	"testing"
)

// TestACPKeepsBounded: an agent that floods tool calls and permission requests, each with an
// input of most of a line, never makes the client hold more than acpMaxKept of them, in tools
// or in requests (R36); the newest are still known.
func TestACPKeepsBounded(t *testing.T) {
	a := NewACP("agt", "test")
	a.Connect("/w", "")
	pad := strings.Repeat("x", 512<<10)
	var events []Event
	for i := range 200 {
		call := fmt.Sprintf(`{"toolCallId":"t%d","title":"x","kind":"execute","status":"pending","rawInput":{"command":"%s"}}`, i, pad)
		events = a.Decode(events[:0], []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call",`+call[1:]+`}}`))
		events = a.Decode(events[:0], []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s","toolCall":%s,"options":[{"optionId":"%s","kind":"allow_once"}]}}`, i, call, pad)))
		if a.toolBytes > acpMaxKept+1<<20 || a.askBytes > acpMaxKept+1<<20 {
			t.Fatalf("after %d calls: %d bytes of tools, %d of requests kept", i+1, a.toolBytes, a.askBytes)
		}
	}
	held := 0
	for _, tl := range a.tools {
		held += tl.size()
	}
	if held != a.toolBytes {
		t.Fatalf("tools hold %d bytes, counted %d", held, a.toolBytes)
	}
	if _, err := a.Answer("199", true, false); err != nil {
		t.Fatalf("the newest request is forgotten: %v", err)
	}
}
