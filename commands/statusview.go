package commands

import (
	"encoding/json"
	"strconv"
	"time"

	"agt/state"
	"agt/stream"
)

// The status of an agent as the commands show it is one table, statusFields: ps and inspect
// take their status fields from it, in its order, under the names status.json gives them, and
// leave a field out when it is empty exactly where status.json does (TestStatusFieldsAgree
// holds the three together). A new field is one row.

// Views of the status.
const (
	inPs      = 1 << iota // agt ps: its NDJSON, templates and table
	inInspect             // agt inspect
)

// statusField is one field of an agent's status.
type statusField struct {
	key   string                                  // its name, as in status.json
	in    int                                     // the views that show it
	empty func(st *state.Status) bool             // nil: shown even when empty; else left out when empty
	put   func(b []byte, st *state.Status) []byte // appends its value as JSON
}

var statusFields = []statusField{
	{key: "kind", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Kind) }},
	{key: "state", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.State) }},
	{key: "reason", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Reason) }},
	{key: "error", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Error) }},
	{key: "pid", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return strconv.AppendInt(b, int64(st.PID), 10) }},
	{key: "supervisor_pid", in: inInspect, empty: func(st *state.Status) bool { return st.SupervisorPID == 0 },
		put: func(b []byte, st *state.Status) []byte { return strconv.AppendInt(b, int64(st.SupervisorPID), 10) }},
	{key: "started", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return appendTime(b, st.Started) }},
	{key: "updated", in: inPs, put: func(b []byte, st *state.Status) []byte { return appendTime(b, st.Updated) }},
	{key: "since", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return appendTime(b, st.Since) }},
	{key: "activity", in: inPs, put: func(b []byte, st *state.Status) []byte { return appendTime(b, st.Activity) }},
	{key: "doing", in: inPs, empty: func(st *state.Status) bool { return st.Doing == "" },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Doing) }},
	{key: "restarts", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return strconv.AppendInt(b, int64(st.Restarts), 10) }},
	{key: "exit_code", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte {
		if st.ExitCode == nil {
			return append(b, "null"...)
		}
		return strconv.AppendInt(b, int64(*st.ExitCode), 10)
	}},
	{key: "signal", in: inInspect, empty: func(st *state.Status) bool { return st.Signal == "" },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Signal) }},
	{key: "history", in: inInspect, empty: func(st *state.Status) bool { return len(st.History) == 0 },
		put: func(b []byte, st *state.Status) []byte { return appendMarshal(b, st.History) }},
	{key: "dir", in: inPs, put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Dir) }},
	{key: "session_id", in: inPs | inInspect, empty: func(st *state.Status) bool { return st.SessionID == "" },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.SessionID) }},
	{key: "model", in: inPs | inInspect, empty: func(st *state.Status) bool { return st.Model == "" },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Model) }},
	{key: "turns", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return strconv.AppendInt(b, int64(st.Turns), 10) }},
	{key: "cost_usd", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return stream.AppendCost(b, st.CostUSD) }},
	{key: "max_cost", in: inPs, empty: func(st *state.Status) bool { return st.MaxCost == 0 },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendCost(b, &st.MaxCost) }},
	{key: "usage", in: inPs | inInspect, put: func(b []byte, st *state.Status) []byte { return stream.AppendUsage(b, stream.Usage(st.Usage)) }},
	{key: "workspace", in: inPs | inInspect, empty: func(st *state.Status) bool { return len(st.Workspace) == 0 },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendCompact(b, st.Workspace) }},
	{key: "group", in: inPs, empty: func(st *state.Status) bool { return st.Group == "" },
		put: func(b []byte, st *state.Status) []byte { return stream.AppendString(b, st.Group) }},
}

// appendStatus appends the JSON object of agent name's status st as view shows it, without
// its closing brace: a view may add fields of its own. Not reflected: ps runs in shell prompts
// (BenchmarkPsRow: 1.45 µs a row, no allocation; encoding/json 4.2 µs and 5 allocations).
func appendStatus(b []byte, name string, st *state.Status, view int) []byte {
	b = stream.AppendString(append(b, `{"name":`...), name)
	for i := range statusFields {
		f := &statusFields[i]
		if f.in&view == 0 || f.empty != nil && f.empty(st) {
			continue
		}
		b = append(append(append(append(b, ',', '"'), f.key...), '"'), ':')
		b = f.put(b, st)
	}
	return b
}

// viewFields are the names of view's fields, for its --format help and templates.
func viewFields(view int) []string {
	out := []string{"name"}
	for _, f := range statusFields {
		if f.in&view != 0 {
			out = append(out, f.key)
		}
	}
	return out
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	return append(t.AppendFormat(b, time.RFC3339Nano), '"')
}

// appendMarshal appends v as encoding/json writes it, for the fields no ps row shows.
func appendMarshal(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}
