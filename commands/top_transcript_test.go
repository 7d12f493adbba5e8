package commands

import (
	"strings"
	"testing"
)

// A host's agent in top's transcript is HOST:NAME, and the answer its request quotes names
// the host: pasted here, 'agt approve cleaner ID' would look for cleaner on this machine.
func TestTopTranscriptOfHostNamesHost(t *testing.T) {
	ev := `{"host":"box2","v":1,"ts":"2026-11-26T20:20:06Z","agent":"cleaner","seq":6,"type":"permission","id":"req-1","tool":"Bash","input":{"command":"make"},"options":null,"decision":"ask"}`
	text := strings.Join(renderTranscript([][]byte{[]byte(ev)}, "box2", "cleaner", ""), "\n")
	if !strings.Contains(text, "agt approve box2:cleaner req-1") || !strings.Contains(text, "box2:cleaner  ? Bash") {
		t.Errorf("the transcript of box2:cleaner does not name its host:\n%s", text)
	}
	here := strings.Join(renderTranscript([][]byte{[]byte(ev)}, "", "cleaner", ""), "\n")
	if !strings.Contains(here, "agt approve cleaner req-1") {
		t.Errorf("an agent here is its bare name:\n%s", here)
	}
}
