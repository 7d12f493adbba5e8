package ctl

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"agt/stream"
)

// Ready is the one line a starting supervisor writes on the readiness pipe: {"spawned":EVENT}
// or {"error":"why"}. Both ends code it by hand: it is on the path of every spawn, and
// encoding/json's first use in a process costs more than the rest of the line's trip.
type Ready struct {
	Spawned json.RawMessage `json:"spawned,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Line is the line, with its newline.
func (m Ready) Line() []byte {
	if m.Error != "" || len(m.Spawned) == 0 {
		b := stream.AppendString([]byte(`{"error":`), m.Error)
		return append(b, "}\n"...)
	}
	b := append([]byte(`{"spawned":`), m.Spawned...)
	return append(b, "}\n"...)
}

// ParseReady reads a line that Line wrote.
func ParseReady(line []byte) (Ready, error) {
	if !gjson.ValidBytes(line) {
		return Ready{}, errors.New("not JSON")
	}
	var m Ready
	if r := gjson.GetBytes(line, "spawned"); r.IsObject() {
		m.Spawned = json.RawMessage(r.Raw)
	}
	m.Error = gjson.GetBytes(line, "error").String()
	if m.Error == "" && m.Spawned == nil {
		return Ready{}, errors.New("neither spawned nor error")
	}
	return m, nil
}
