package stream

import "runtime/debug"

// Decoder turns an agent's stdout, one line at a time, into events. Implementations keep the
// little state a format needs (cumulative cost, the open turn, the last lines of stderr) in
// bounded memory, and never fail: what they cannot read becomes an "unparsed" event with the raw
// line.
//
// The supervisor hands Decode and DecodeStderr complete lines only, without the newline; a line
// longer than its cap never reaches the decoder (the supervisor records it as truncated itself).
// The slice passed in is reused after the call: copy what you keep.
type Decoder interface {
	// Decode appends the events of one line of stdout to dst and returns it.
	Decode(dst []Event, line []byte) []Event
	// DecodeStderr appends the events one line of the agent's stderr means beyond the stderr
	// event the supervisor writes for every line: a retry notice, the model, nothing at all. It
	// also lets the decoder remember stderr for End's Failure.
	DecodeStderr(dst []Event, line []byte) []Event
	// End is called once, after the process has exited. It appends whatever the stream left
	// open (a turn cut off by a signal gets a synthesized result) and says why the run failed:
	// the zero Failure for a clean exit (code 0, no signal), else Class is always set (transient
	// when nothing more specific is known) and Message is the best one-line message seen (the
	// stream's fatal error, a meaningful stderr line, what the exit code stands for), else
	// "exit code N" or "killed by SIGX". One exception to the clean exit: an ACP client that
	// ended the run itself (Handshake failed with an auth or config failure) returns that
	// failure however the agent exited. After End the decoder is ready for the next run.
	End(dst []Event, exit Exit) ([]Event, Failure)
}

// A LogReader is a Decoder that reads the agent's own log on its stderr (opencode's): Routine
// reports whether a line is a routine entry of it, which DecodeStderr has turned into what it
// means (a session event, or nothing), so that no stderr event is written for it. stderr.log
// keeps every line.
type LogReader interface {
	Routine(line []byte) bool
}

// SessionResumer is a Decoder of running totals for a session (Codex's usage is cumulative for
// the thread), which reports each turn as the difference from the last total. SessionTotal is
// the last total the agent reported for session id; told where a session's total stood when an
// earlier decoder left off, a new one reports only what the resumed session adds.
type SessionResumer interface {
	SessionTotal(id string) (Usage, bool)
	ResumeSession(id string, total Usage)
}

// Exit says how the agent's process ended.
type Exit struct {
	Code   int    // exit code; -1 when killed by a signal
	Signal string // signal name ("SIGTERM") when killed by one, else ""
}

// Text is the decoder of plain-text agents: every stdout line becomes an "output" event.
type Text struct{}

// Decode implements Decoder.
func (Text) Decode(dst []Event, line []byte) []Event {
	return append(dst, Event{Type: TypeOutput, Line: string(line)})
}

// DecodeStderr implements Decoder: a plain command's stderr means nothing more than itself.
func (Text) DecodeStderr(dst []Event, _ []byte) []Event { return dst }

// End implements Decoder: a failed exit is transient, "exit code N" or "killed by SIGX".
func (Text) End(dst []Event, exit Exit) ([]Event, Failure) {
	if exit.Clean() {
		return dst, Failure{}
	}
	return dst, Failure{ClassTransient, exitText(exit)}
}

// Unparsed returns the event for a line a decoder could not read.
func Unparsed(line []byte) Event { return Event{Type: TypeUnparsed, Raw: string(line)} }

// ForFormat returns a fresh decoder for a kind's format: claude, codex, opencode, gemini, acp
// (an *ACP, the client of the protocol), codex-app-server (a *CodexServer, likewise), or text
// (the default for anything else).
func ForFormat(format string) Decoder {
	for _, f := range decoders {
		if f.name == format {
			return f.decoder()
		}
	}
	return Text{}
}

// decoders is every format agt decodes, and the decoder of each: the one table that agt.toml's
// format key is checked against (Formats) and ForFormat chooses from, so that a format without
// a decoder cannot exist.
var decoders = []struct {
	name    string
	decoder func() Decoder
	// protocol: agt is the client of a protocol the agent speaks on its stdin and stdout, so
	// the decoder also writes back (ACP, CodexServer); model: the protocol names the model
	// (thread/start), which the argv then need not.
	protocol, model bool
}{
	{"claude", func() Decoder { return NewClaude() }, false, false},
	{"codex", func() Decoder { return NewCodex() }, false, false},
	{"opencode", func() Decoder { return NewOpencode() }, false, false},
	{"gemini", func() Decoder { return NewGemini() }, false, false},
	{"acp", func() Decoder { return NewACP("agt", buildVersion()) }, true, false},
	{"text", func() Decoder { return Text{} }, false, false},
	{"codex-app-server", func() Decoder { return NewCodexServer("agt", buildVersion()) }, true, true},
}

// IsProtocol reports whether format is a protocol agt speaks as the agent's client, over its
// stdin and stdout (acp, codex-app-server): every agent of the format is a conversation.
func IsProtocol(format string) bool {
	for _, f := range decoders {
		if f.name == format {
			return f.protocol
		}
	}
	return false
}

// ModelInProtocol reports whether the protocol of format names the model itself (Codex's
// thread/start), so that no argument of the agent's argv has to.
func ModelInProtocol(format string) bool {
	for _, f := range decoders {
		if f.name == format {
			return f.model
		}
	}
	return false
}

// Formats lists the formats agt decodes.
func Formats() []string {
	names := make([]string, len(decoders))
	for i, f := range decoders {
		names[i] = f.name
	}
	return names
}

// buildVersion is agt's module version as the build recorded it, for the agents that ask who
// their client is (ACP's clientInfo).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
