package stream

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The end of a Claude turn: its result line, and the cost, tokens and failure it reports.

func (d *claudeDecoder) result(dst []Event, l *claudeLine) []Event {
	var ok bool
	switch {
	case jsonIsBool(l.isError):
		ok = !jsonTrue(l.isError)
	case l.subtype != "":
		ok = l.subtype == "success"
	default:
		return dst
	}
	l.denials.ForEach(func(_, v gjson.Result) bool {
		var id, tool, input gjson.Result
		v.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "tool_use_id":
				id = v
			case "tool_name":
				tool = v
			case "tool_input":
				input = v
			}
			return true
		})
		dst = d.deny(dst, id, tool, input)
		return true
	})
	ev := Event{
		Type:       TypeResult,
		OK:         ok,
		Steps:      int(jsonInt(l.numTurns)),
		DurationMS: jsonInt(l.durationMS),
		CostUSD:    d.cost(l),
		Usage:      claudeUsage(l),
	}
	if ok {
		ev.Text = jsonString(l.result)
	} else {
		ev.Text = claudeFailure(l)
		dst = append(dst, d.turnError(l, ev.Text))
	}
	d.open, d.apiError = false, ""
	clear(d.tools)
	clear(d.denied)
	return append(dst, ev)
}

// turnError is the error event of a failed turn, classified by the API status, the message, the
// category of the synthetic API error message, and the subtype, in that order.
func (d *claudeDecoder) turnError(l *claudeLine, msg string) Event {
	ev := fatalError(msg, int(jsonInt(l.apiErrorStatus)))
	if ev.Class != ClassTransient {
		return ev
	}
	if class, _ := classify(0, d.apiError); class != "" {
		ev.Class = class
	} else if l.subtype == "error_max_turns" || l.subtype == "error_max_budget_usd" {
		ev.Class = ClassConfig
	}
	return ev
}

// claudeFailure is the message of a failed turn: the result text (API errors), else errors[]
// prefixed with the terminal reason (max_turns, aborted_tools, …).
func claudeFailure(l *claudeLine) string {
	if l.result.Type == gjson.String && l.result.Str != "" {
		return jsonString(l.result)
	}
	msg := jsonJoin(l.errors, "; ")
	reason := l.terminalReason.Str
	switch {
	case msg == "" && reason != "":
		return strings.Clone(reason)
	case msg == "" && l.subtype != "":
		return strings.Clone(l.subtype)
	case msg == "":
		return "turn failed"
	case reason != "" && reason != "completed":
		return reason + ": " + msg
	}
	return msg
}

// cost returns this turn's cost, or nil when the line reports none.
func (d *claudeDecoder) cost(l *claudeLine) *float64 {
	var total float64
	haveTotal := l.totalCost.Type == gjson.Number
	if haveTotal {
		total = l.totalCost.Num
	}
	prev, hadPrev := d.lastTotal, d.haveTotal
	if haveTotal {
		d.lastTotal, d.haveTotal = total, true
	}
	if l.sinceLast.IsObject() {
		var c float64
		l.sinceLast.ForEach(func(_, m gjson.Result) bool {
			if v := m.Get("costUSD"); v.Type == gjson.Number {
				c += v.Num
			}
			return true
		})
		return &c
	}
	if !haveTotal {
		return nil
	}
	c := total
	if hadPrev && total >= prev {
		c = total - prev
	}
	return &c
}

// claudeUsage returns this turn's tokens: model_usage_since_last_result summed over models when
// it names any, else result.usage. input_tokens never includes cached tokens in Claude's counts.
func claudeUsage(l *claudeLine) *Usage {
	var u Usage
	n := 0
	if l.sinceLast.IsObject() {
		l.sinceLast.ForEach(func(_, m gjson.Result) bool {
			n++
			m.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "inputTokens":
					u.InputTokens += jsonInt(v)
				case "outputTokens":
					u.OutputTokens += jsonInt(v)
				case "cacheReadInputTokens":
					u.CacheReadTokens += jsonInt(v)
				case "cacheCreationInputTokens":
					u.CacheWriteTokens += jsonInt(v)
				}
				return true
			})
			return true
		})
	}
	if n == 0 && l.usage.IsObject() {
		l.usage.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "input_tokens":
				u.InputTokens = jsonInt(v)
			case "output_tokens":
				u.OutputTokens = jsonInt(v)
			case "cache_read_input_tokens":
				u.CacheReadTokens = jsonInt(v)
			case "cache_creation_input_tokens":
				u.CacheWriteTokens = jsonInt(v)
			}
			return true
		})
	}
	u.InputTokens, u.OutputTokens = nonNegative(u.InputTokens), nonNegative(u.OutputTokens)
	u.CacheReadTokens, u.CacheWriteTokens = nonNegative(u.CacheReadTokens), nonNegative(u.CacheWriteTokens)
	return &u
}
