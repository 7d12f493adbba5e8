package ctl

import (
	"slices"
	"strings"
	"testing"

	"agt/pids"
)

func TestSurvivedSIGKILL(t *testing.T) {
	if got := SurvivedSIGKILL([]pids.Identity{{PID: 7}}); got != "1 process survived SIGKILL: pid 7" {
		t.Error(got)
	}
	var many []pids.Identity
	for pid := 1; pid <= 12; pid++ {
		many = append(many, pids.Identity{PID: pid})
	}
	if got := SurvivedSIGKILL(many); got != "12 processes survived SIGKILL: pids 1 2 3 4 5 6 7 8 9 10 …" {
		t.Error(got)
	}
}

func TestCostText(t *testing.T) {
	for c, want := range map[float64]string{0.004321: "0.004321", 0.01: "0.01", 12.345: "12.35"} {
		if got := CostText(c); got != want {
			t.Errorf("CostText(%v) = %q, want %q", c, got, want)
		}
	}
}

// TestEnvironRecordedAndReplayed: a secret is recorded by name alone and taken from the
// environment of whoever starts the agent; agt's own per-agent variables are not recorded.
func TestEnvironRecordedAndReplayed(t *testing.T) {
	rec := RecordEnviron([]string{"HOME=/home/a", "ANTHROPIC_API_KEY=sk-1", "AGT_INSTANCE=x", "DB=postgres://u:pw@h/db", "NOEQ"})
	if want := []string{"HOME=/home/a", "ANTHROPIC_API_KEY", "DB"}; !slices.Equal(rec, want) {
		t.Fatalf("recorded %q, want %q", rec, want)
	}
	lookup := func(k string) (string, bool) {
		if k == "ANTHROPIC_API_KEY" {
			return "sk-2", true
		}
		return "", false
	}
	if got, want := BaseEnviron(rec, nil, lookup), []string{"HOME=/home/a", "ANTHROPIC_API_KEY=sk-2"}; !slices.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
	if got := BaseEnviron(nil, []string{"A=1"}, lookup); !slices.Equal(got, []string{"A=1"}) {
		t.Fatalf("without a record: %q", got)
	}
}

func TestNewSessionID(t *testing.T) {
	a, b := NewSessionID(), NewSessionID()
	if a == b || len(a) != 36 || strings.Count(a, "-") != 4 || a[14] != '4' {
		t.Fatalf("%q, %q", a, b)
	}
}

// TestSupervisorEnv: a supervisor started from inside an agent is no part of its tree.
func TestSupervisorEnv(t *testing.T) {
	t.Setenv("AGT_INSTANCE", "parent")
	t.Setenv("AGT_NAME", "parent")
	t.Setenv("KEEP", "1")
	env := SupervisorEnv()
	if slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "AGT_INSTANCE=") || strings.HasPrefix(kv, "AGT_NAME=")
	}) ||
		!slices.Contains(env, "KEEP=1") {
		t.Fatalf("%q", env)
	}
}
