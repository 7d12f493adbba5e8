package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"agt/state"
	"agt/stream"
)

// The inbox: agents/NAME/permissions/ID.json, one file per request the agent waits on, written
// by its supervisor, read by anyone who would answer.

// Waiting is what an agent waits on a person for: its reason (permission, plan, input, quiet)
// and, for a request in its inbox, the oldest one: its id, tool and input as the agent sent
// them. Pending counts the requests in the inbox.
type Waiting struct {
	Reason  string          `json:"reason"`
	ID      string          `json:"id,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Pending int             `json:"pending,omitempty"`
}

// WaitingFor says what a waits on a person for, from its status st and its inbox; nil when it
// waits for nobody (running, ended, stalled). It reads the inbox only for a permission or a
// plan: ps calls it for every waiting agent.
func WaitingFor(a *state.Agent, st *state.Status) *Waiting {
	switch {
	case st.State == stream.Waiting:
	case st.State == stream.Stale && st.Reason != stream.ReasonStalled:
	default:
		return nil
	}
	w := &Waiting{Reason: st.Reason}
	if st.Reason != stream.ReasonPermission && st.Reason != stream.ReasonPlan {
		return w
	}
	perms := Permissions(a)
	if len(perms) == 0 {
		return w
	}
	sort.Slice(perms, func(i, j int) bool { return perms[i].Seq < perms[j].Seq })
	p := perms[0]
	w.ID, w.Tool, w.Input, w.Pending = p.ID, p.Tool, p.Input, len(perms)
	return w
}

// Line says in one line what the agent waits for: "permission: Bash mkdir x && …", "plan: 1.
// add the test …", "question: which database?", or the bare reason; "" for nil. The agent's
// words in it are as it wrote them: a terminal needs them made safe.
func (w *Waiting) Line() string {
	if w == nil {
		return ""
	}
	if w.Tool == "" {
		return w.Reason
	}
	in := gjson.ParseBytes(w.Input)
	switch {
	case w.Reason == stream.ReasonPlan || in.Get("plan").Type == gjson.String:
		return "plan: " + stream.FirstLine(in.Get("plan").String())
	case in.Get("questions.0.question").Exists():
		return "question: " + stream.FirstLine(in.Get("questions.0.question").String())
	case in.Get("question").Type == gjson.String:
		return "question: " + stream.FirstLine(in.Get("question").String())
	}
	line := w.Reason + ": " + w.Tool
	if s := stream.InputLine(w.Input); s != "" {
		line += " " + s
	}
	return line
}

// Permissions returns the requests a's inbox holds, in no order. A file that is not a regular
// one of at most 1 MiB (a link, a FIFO) is skipped, never followed or waited on (state.ReadSmall).
func Permissions(a *state.Agent) []Permission {
	dir := a.Path(state.PermissionsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // none asked
	}
	var out []Permission
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := state.ReadSmall(filepath.Join(dir, e.Name()))
		var p Permission
		if err == nil && json.Unmarshal(b, &p) == nil && p.ID != "" {
			out = append(out, p)
		}
	}
	return out
}
