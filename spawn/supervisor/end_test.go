package supervisor

import (
	"testing"
	"time"

	"agt/config"
	"agt/spawn/ctl"
	"agt/stream"
)

// TestDecide walks the end-of-run table row by row: each case is the first row it matches.
func TestDecide(t *testing.T) {
	b := backoff{Initial: time.Second, Max: 30 * time.Second, Healthy: 10 * time.Minute, MaxRestarts: 3}
	ok := &stream.Exit{}
	code1 := &stream.Exit{Code: 1}
	segv := &stream.Exit{Code: -1, Signal: "SIGSEGV"}
	auth := stream.Failure{Class: stream.ClassAuth, Message: "invalid key"}
	rate := stream.Failure{Class: stream.ClassRate, Message: "429"}
	transient := stream.Failure{Class: stream.ClassTransient, Message: "overloaded"}
	const (
		never  = config.RestartNever
		onFail = config.RestartOnFailure
		always = config.RestartAlways
	)
	tests := []struct {
		name     string
		end      runEnd
		policy   string
		failures int
		want     decision
	}{
		// A restart that could not start: a failure like any other, without a run to judge.
		{"start failed: restart after the backoff", runEnd{startErr: "gone"}, onFail, 1,
			decision{do: restartRun, delay: 2 * time.Second, failures: 2}},
		{"start failed: no restart left", runEnd{startErr: "gone"}, onFail, 3,
			decision{do: finishRun, state: stream.Failed, reason: "gave up after 3 restarts in a row (gone)", failures: 4}},
		{"start failed: a stop is the wait's to see", runEnd{startErr: "gone", stopped: true}, onFail, 0,
			decision{do: restartRun, delay: time.Second, failures: 1}},

		// What outranks the exit.
		{"survivors, even of a clean exit under always", runEnd{exit: ok, survivors: true, spent: true, stopped: true}, always, 2,
			decision{do: finishRun, state: stream.Failed, reason: ctl.ReasonSurvivors, failures: 2}},
		{"over the budget, even when stopped", runEnd{exit: code1, spent: true, stopped: true}, always, 0,
			decision{do: finishRun, state: stream.Failed, reason: stream.ClassBudget}},
		{"a stop that raced a crash wins over the restart", runEnd{exit: code1, stopped: true, turnEnded: true}, always, 1,
			decision{do: finishRun, state: stream.Stopped, reason: "stop", failures: 1}},

		// A process per turn.
		{"a turn's end starts no restart: the next turn, failures forgotten", runEnd{exit: ok, turnEnded: true}, never, 2,
			decision{do: nextTurn}},

		// Failures no restart cures.
		{"a bad key fails at once", runEnd{exit: code1, failure: auth}, always, 0,
			decision{do: finishRun, state: stream.Failed, reason: stream.ClassAuth, failed: true}},
		{"a clean exit with a failure the client saw (ACP) is a failure", runEnd{exit: ok, failure: auth}, always, 0,
			decision{do: finishRun, state: stream.Failed, reason: stream.ClassAuth, failed: true}},

		// No restart asked for.
		{"restart never: the exit code says how", runEnd{exit: code1}, never, 0,
			decision{do: finishRun, state: stream.Failed, reason: "exit code 1", failed: true}},
		{"restart never: a signal", runEnd{exit: segv}, never, 0,
			decision{do: finishRun, state: stream.Failed, reason: "killed by SIGSEGV", failed: true}},
		{"restart never: the decoder's class outranks the code", runEnd{exit: code1, failure: rate}, never, 0,
			decision{do: finishRun, state: stream.Failed, reason: stream.ClassRate, failed: true}},
		{"restart never: a transient class that says no more than the code is the code's", runEnd{exit: code1, failure: stream.Failure{Class: stream.ClassTransient, Message: "exit code 1"}}, never, 0,
			decision{do: finishRun, state: stream.Failed, reason: "exit code 1", failed: true}},
		{"restart never: a transient failure the agent reported is named", runEnd{exit: code1, failure: transient}, never, 0,
			decision{do: finishRun, state: stream.Failed, reason: stream.ClassTransient, failed: true}},
		{"on-failure: a clean exit is the end", runEnd{exit: ok}, onFail, 2,
			decision{do: finishRun, state: stream.Exited, failures: 2}},

		// Restarts.
		{"on-failure: the first failure restarts after the first delay", runEnd{exit: code1, ran: time.Second}, onFail, 0,
			decision{do: restartRun, delay: time.Second, failures: 1, failed: true}},
		{"the delay doubles", runEnd{exit: code1, ran: time.Second}, onFail, 2,
			decision{do: restartRun, delay: 4 * time.Second, failures: 3, failed: true}},
		{"a healthy run forgets the failures before it", runEnd{exit: code1, ran: 10 * time.Minute}, onFail, 3,
			decision{do: restartRun, delay: time.Second, failures: 1, failed: true}},
		{"no restart left: failed, saying why", runEnd{exit: code1, ran: time.Second}, onFail, 3,
			decision{do: finishRun, state: stream.Failed, reason: "gave up after 3 restarts in a row (exit code 1)", failures: 4, failed: true}},
		{"a signal is a failure too", runEnd{exit: segv}, onFail, 1,
			decision{do: restartRun, delay: 2 * time.Second, failures: 2, failed: true}},
		{"a rate limit waits the longest delay", runEnd{exit: code1, failure: rate}, onFail, 0,
			decision{do: restartRun, delay: 30 * time.Second, failures: 1, failed: true}},
		{"always: a clean exit restarts, and never counts", runEnd{exit: ok}, always, 3,
			decision{do: restartRun, delay: time.Second, failures: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.end, tt.policy, b, tt.failures, 0.5)
			if got != tt.want {
				t.Errorf("decide = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func TestGaveUp(t *testing.T) {
	if got := gaveUp(1, "exit code 1"); got != "gave up after 1 restart (exit code 1)" {
		t.Error(got)
	}
	if got := gaveUp(5, "auth"); got != "gave up after 5 restarts in a row (auth)" {
		t.Error(got)
	}
}
