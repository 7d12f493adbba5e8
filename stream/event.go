// Package stream defines agt's normalized event (schema v1), the decoders that turn each agent's
// wire format into events, and the pure state machine that turns events and silence into states.
//
// Invariants: a decoder never fails and never panics on input; a line it cannot read becomes an
// "unparsed" event carrying the raw text. Decoders leave V, TS, Agent and Seq zero: the supervisor
// stamps them when it appends the event to the log. Every event serializes to one line of JSON
// with exactly the fields its type names below, so readers can rely on their presence; the
// fields marked optional appear only when set.
//
// Events of schema v1: every line has v, ts, agent, seq and type, then
//
//	spawned      kind, argv, cwd, workspace, pid
//	state        from, to, reason
//	session      session_id, model, cwd (session_id is "" when a decoder learns only the model)
//	text         text; delta (optional, true: a chunk; the decoders no longer write chunks);
//	             thought (optional, true: the agent's reasoning, not its answer: ACP's thought chunks)
//	tool_use     id, tool, input
//	tool_result  id, tool, ok, output
//	permission   id, tool, input, options; decision (optional: "deny" or "allow" when the event
//	             reports a decision already taken, absent while the agent waits for one)
//	result       ok, text, turns, duration_ms, cost_usd (null when unknown), usage; steps
//	             (optional: the agent's own count of model round trips in the turn)
//	output       line; truncated and bytes (optional)
//	stderr       line; truncated and bytes (optional)
//	error        message, source, fatal; class (optional: auth, config, rate, transient, session),
//	             status (optional: the HTTP status of a failed model request), attempt (optional:
//	             the retry number of a model request the agent retries; fatal is then false),
//	             code (optional: the JSON-RPC error code of an ACP agent's error answer)
//	restart      attempt, delay_ms, reason
//	exit         code (null when killed by a signal), signal (null when not)
//	unparsed     raw; truncated and bytes (optional)
//	gap          missed, from_seq, to_seq: never in a log; a follower (agt tail -f) that fell
//	             further behind than the rotated logs kept says so with it, in place of the
//	             events from_seq to to_seq (missed of them); its seq is to_seq
package stream

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"agt/termsafe"
)

// Version is the event schema version written in every event's "v" field.
const Version = 1

// Event types of schema v1.
const (
	TypeSpawned    = "spawned"
	TypeState      = "state"
	TypeSession    = "session"
	TypeText       = "text"
	TypeToolUse    = "tool_use"
	TypeToolResult = "tool_result"
	TypePermission = "permission"
	TypeResult     = "result"
	TypeOutput     = "output"
	TypeStderr     = "stderr"
	TypeError      = "error"
	TypeRestart    = "restart"
	TypeExit       = "exit"
	TypeUnparsed   = "unparsed"
	TypeGap        = "gap"
)

// Types are the event types of schema v1, in the order DESIGN.md lists them.
var Types = []string{
	TypeSpawned, TypeState, TypeSession, TypeText, TypeToolUse, TypeToolResult, TypePermission,
	TypeResult, TypeOutput, TypeStderr, TypeError, TypeRestart, TypeExit, TypeUnparsed, TypeGap,
}

// Error sources.
const (
	SourceAgent      = "agent"
	SourceSupervisor = "supervisor"
	SourceDecoder    = "decoder"
)

// Usage counts tokens of one turn.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
}

// Event is one normalized event. Which fields are meaningful depends on Type; AppendJSON writes
// exactly those. Input, Output and Options hold JSON as the agent sent it.
type Event struct {
	V     int       `json:"v"`
	TS    time.Time `json:"ts"`
	Agent string    `json:"agent"`
	Seq   int64     `json:"seq"`
	Type  string    `json:"type"`

	// spawned
	Kind      string          `json:"kind,omitempty"`
	Argv      []string        `json:"argv,omitempty"`
	Cwd       string          `json:"cwd,omitempty"`
	Workspace json.RawMessage `json:"workspace,omitempty"`
	PID       int             `json:"pid,omitempty"`

	// state
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Reason string `json:"reason,omitempty"`

	// session
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`

	// text, result; Delta stays for readers of older logs: decoders send whole texts only.
	Text  string `json:"text,omitempty"`
	Delta bool   `json:"delta,omitempty"`
	// text: the agent's reasoning (ACP's agent_thought_chunk), not its answer.
	Thought bool `json:"thought,omitempty"`

	// tool_use, tool_result, permission
	ID      string          `json:"id,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`

	// permission: "deny" or "allow" when the decision is taken already, "" while it waits.
	Decision string `json:"decision,omitempty"`
	// permission: the agt.toml policy rule that decided, when one did
	Rule string `json:"rule,omitempty"`

	// result: Turns is the supervisor's count of finished turns (decoders leave it 0), Steps the
	// agent's own count of model round trips in the turn (0 when it reports none).
	Turns      int      `json:"turns,omitempty"`
	Steps      int      `json:"steps,omitempty"`
	DurationMS int64    `json:"duration_ms,omitempty"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	Usage      *Usage   `json:"usage,omitempty"`

	// output, stderr; Truncated is set when the line was longer than the cap and was cut.
	Line      string `json:"line,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Bytes     int    `json:"bytes,omitempty"`

	// error: Class (a Class* constant) and Status (HTTP) say why, when the decoder knows.
	Message string `json:"message,omitempty"`
	Source  string `json:"source,omitempty"`
	Fatal   bool   `json:"fatal,omitempty"`
	Class   string `json:"class,omitempty"`
	Status  int    `json:"status,omitempty"`

	// restart; error: the retry number (from 1) of a model request the agent retries.
	Attempt int   `json:"attempt,omitempty"`
	DelayMS int64 `json:"delay_ms,omitempty"`

	// exit: Code is null when the agent was killed by a signal; error: the JSON-RPC code of an
	// ACP agent's error answer, absent when nil.
	Code   *int   `json:"code,omitempty"`
	Signal string `json:"signal,omitempty"`

	// unparsed
	Raw string `json:"raw,omitempty"`

	// gap: the events a follower missed, seq FromSeq to ToSeq (Missed of them).
	Missed  int64 `json:"missed,omitempty"`
	FromSeq int64 `json:"from_seq,omitempty"`
	ToSeq   int64 `json:"to_seq,omitempty"`
}

// MarshalJSON writes the event as AppendJSON does.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends the event as one JSON object, without a newline, to dst. It writes the
// common fields and exactly the fields of the event's type (a missing cost is null, not absent);
// the optional fields (decision, steps, class, status, an error's attempt) only when set.
func (e *Event) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(e.V), 10)
	dst = append(dst, `,"ts":"`...)
	dst = e.TS.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	dst = appendStringField(dst, "agent", e.Agent)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = appendStringField(dst, "type", e.Type)
	switch e.Type {
	case TypeSpawned:
		dst = appendStringField(dst, "kind", e.Kind)
		dst = append(dst, `,"argv":[`...)
		for i, a := range e.Argv {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, a)
		}
		dst = append(dst, ']')
		dst = appendStringField(dst, "cwd", e.Cwd)
		dst = appendRawField(dst, "workspace", e.Workspace)
		dst = appendIntField(dst, "pid", int64(e.PID))
	case TypeState:
		dst = appendStringField(dst, "from", e.From)
		dst = appendStringField(dst, "to", e.To)
		dst = appendStringField(dst, "reason", e.Reason)
	case TypeSession:
		dst = appendStringField(dst, "session_id", e.SessionID)
		dst = appendStringField(dst, "model", e.Model)
		dst = appendStringField(dst, "cwd", e.Cwd)
	case TypeText:
		dst = appendStringField(dst, "text", e.Text)
		if e.Delta {
			dst = append(dst, `,"delta":true`...)
		}
		if e.Thought {
			dst = append(dst, `,"thought":true`...)
		}
	case TypeToolUse:
		dst = appendStringField(dst, "id", e.ID)
		dst = appendStringField(dst, "tool", e.Tool)
		dst = appendRawField(dst, "input", e.Input)
	case TypeToolResult:
		dst = appendStringField(dst, "id", e.ID)
		dst = appendStringField(dst, "tool", e.Tool)
		dst = appendBoolField(dst, "ok", e.OK)
		dst = appendRawField(dst, "output", e.Output)
	case TypePermission:
		dst = appendStringField(dst, "id", e.ID)
		dst = appendStringField(dst, "tool", e.Tool)
		dst = appendRawField(dst, "input", e.Input)
		dst = appendRawField(dst, "options", e.Options)
		if e.Decision != "" {
			dst = appendStringField(dst, "decision", e.Decision)
		}
		if e.Rule != "" {
			dst = appendStringField(dst, "rule", e.Rule)
		}
	case TypeResult:
		dst = appendBoolField(dst, "ok", e.OK)
		dst = appendStringField(dst, "text", e.Text)
		dst = appendIntField(dst, "turns", int64(e.Turns))
		if e.Steps != 0 {
			dst = appendIntField(dst, "steps", int64(e.Steps))
		}
		dst = appendIntField(dst, "duration_ms", e.DurationMS)
		dst = AppendCost(append(dst, `,"cost_usd":`...), e.CostUSD)
		var u Usage
		if e.Usage != nil {
			u = *e.Usage
		}
		dst = AppendUsage(append(dst, `,"usage":`...), u)
	case TypeOutput, TypeStderr:
		dst = appendStringField(dst, "line", e.Line)
		dst = appendTruncated(dst, e)
	case TypeError:
		dst = appendStringField(dst, "message", e.Message)
		dst = appendStringField(dst, "source", e.Source)
		dst = appendBoolField(dst, "fatal", e.Fatal)
		if e.Class != "" {
			dst = appendStringField(dst, "class", e.Class)
		}
		if e.Status != 0 {
			dst = appendIntField(dst, "status", int64(e.Status))
		}
		if e.Attempt != 0 {
			dst = appendIntField(dst, "attempt", int64(e.Attempt))
		}
		if e.Code != nil {
			dst = appendIntField(dst, "code", int64(*e.Code))
		}
	case TypeRestart:
		dst = appendIntField(dst, "attempt", int64(e.Attempt))
		dst = appendIntField(dst, "delay_ms", e.DelayMS)
		dst = appendStringField(dst, "reason", e.Reason)
	case TypeExit:
		dst = append(dst, `,"code":`...)
		if e.Code == nil {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendInt(dst, int64(*e.Code), 10)
		}
		dst = append(dst, `,"signal":`...)
		if e.Signal == "" {
			dst = append(dst, "null"...)
		} else {
			dst = AppendString(dst, e.Signal)
		}
	case TypeUnparsed:
		dst = appendStringField(dst, "raw", e.Raw)
		dst = appendTruncated(dst, e)
	case TypeGap:
		dst = appendIntField(dst, "missed", e.Missed)
		dst = appendIntField(dst, "from_seq", e.FromSeq)
		dst = appendIntField(dst, "to_seq", e.ToSeq)
	}
	return append(dst, '}')
}

func appendTruncated(dst []byte, e *Event) []byte {
	if e.Truncated {
		dst = append(dst, `,"truncated":true`...)
		dst = appendIntField(dst, "bytes", int64(e.Bytes))
	}
	return dst
}

func appendStringField(dst []byte, name, v string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return AppendString(dst, v)
}

func appendIntField(dst []byte, name string, v int64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, v, 10)
}

func appendBoolField(dst []byte, name string, v bool) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return strconv.AppendBool(dst, v)
}

// appendRawField writes raw JSON as is when it is valid, null when empty, and as a JSON string
// otherwise, so a line is always valid JSON whatever a decoder handed over.
func appendRawField(dst []byte, name string, raw json.RawMessage) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	switch {
	case len(raw) == 0:
		return append(dst, "null"...)
	case json.Valid(raw):
		return AppendCompact(dst, raw)
	default:
		return AppendString(dst, string(raw))
	}
}

// AppendCompact appends valid JSON with insignificant whitespace (newlines above all) removed,
// so an event stays on one line.
func AppendCompact(dst []byte, raw []byte) []byte {
	start := 0 // raw[start:i] is yet to be copied, in one append
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case ' ', '\t', '\n', '\r':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}

const hex = "0123456789abcdef"

// RoundUSD rounds a cost to a millionth of a dollar; one too large to round stays as it is.
func RoundUSD(c float64) float64 {
	if math.Abs(c) >= 1e9 {
		return c
	}
	return math.Round(c*1e6) / 1e6
}

// AppendCost appends a cost in USD rounded to a millionth of a dollar (sums of the agents'
// floats carry noise: 0.008459999999999999), as encoding/json writes a float64, or null when it
// is unknown (nil) or not a number JSON can hold.
func AppendCost(dst []byte, cost *float64) []byte {
	if cost == nil || math.IsNaN(*cost) || math.IsInf(*cost, 0) {
		return append(dst, "null"...)
	}
	f := RoundUSD(*cost)
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		// e-09 becomes e-9
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// AppendUsage appends token counts as the usage object of events and of ps.
func AppendUsage(dst []byte, u Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, u.InputTokens, 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.OutputTokens, 10)
	dst = append(dst, `,"cache_read_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheReadTokens, 10)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheWriteTokens, 10)
	return append(dst, '}')
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD; control characters
// (C0, DEL and C1) are escaped, so no byte of it is a terminal's control; and U+2028/U+2029 are
// escaped so the output is safe for any JSON reader.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		if termsafe.Unsafe(r) {
			// C1 controls are valid JSON raw, and CSI or OSC to many terminals.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
