package commands

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"agt/state"
)

// TestPsRowJSON checks the hand-written encoder of ps rows against encoding/json.
func TestPsRowJSON(t *testing.T) {
	code := -1
	costs := []float64{0, 1, 0.1234, 1e-7, 2.5e-9, 1e21, 123456789.125, math.SmallestNonzeroFloat64}
	rows := []psRow{{}, {
		Name: "a", Kind: "claude", State: "waiting", Reason: "input \"quoted\"\n\u2028<&>\xff", PID: 42,
		Started:  time.Date(2026, 11, 22, 10, 0, 0, 120000000, time.UTC),
		Updated:  time.Date(2026, 11, 22, 10, 0, 1, 0, time.FixedZone("", -5*3600)),
		Restarts: 3, ExitCode: &code, Dir: "/tmp/ü", SessionID: "s", Model: "m", Turns: 4,
		Usage:     state.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 1 << 50},
		Workspace: json.RawMessage("{\n  \"type\": \"git\",\n  \"path\": \"/w x\"\n}"),
	}}
	for _, c := range costs {
		rows = append(rows, psRow{Name: "c", CostUSD: &c})
	}
	for _, r := range rows {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.appendJSON(nil)
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("appendJSON wrote invalid JSON %s: %v", got, err)
		}
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(g)
		if string(wb) != string(gb) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
		// Byte for byte, where no HTML character or invalid UTF-8 is escaped differently.
		if r.Reason == "" && string(got) != string(want) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	}
}
