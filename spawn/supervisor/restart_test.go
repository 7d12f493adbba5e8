package supervisor

import (
	"slices"
	"testing"
	"time"

	"agt/config"
)

func TestBackoff(t *testing.T) {
	b := backoff{Initial: time.Second, Max: 30 * time.Second, Healthy: 10 * time.Minute, MaxRestarts: 5}
	tests := []struct {
		name     string
		failures int
		ran      time.Duration
		rnd      float64
		n        int
		restart  bool
		delay    time.Duration
	}{
		{"first failure, no jitter", 0, time.Second, 0.5, 1, true, time.Second},
		{"doubles", 1, time.Second, 0.5, 2, true, 2 * time.Second},
		{"doubles again", 2, time.Second, 0.5, 3, true, 4 * time.Second},
		{"jitter low bound", 0, time.Second, 0, 1, true, 800 * time.Millisecond},
		{"jitter high bound", 0, time.Second, 0.75, 1, true, 1100 * time.Millisecond},
		{"gives up after max", 5, time.Second, 0.5, 6, false, 0},
		{"a healthy run resets the count", 4, 10 * time.Minute, 0.5, 1, true, time.Second},
		{"just short of healthy does not", 4, 10*time.Minute - time.Nanosecond, 0.5, 5, true, 16 * time.Second},
	}
	for _, tt := range tests {
		n, restart, delay := b.next(tt.failures, tt.ran, tt.rnd)
		if n != tt.n || restart != tt.restart || delay != tt.delay {
			t.Errorf("%s: got %d %v %v, want %d %v %v", tt.name, n, restart, delay, tt.n, tt.restart, tt.delay)
		}
	}
}

func TestBackoffCaps(t *testing.T) {
	b := backoff{Initial: time.Second, Max: 30 * time.Second, MaxRestarts: 100}
	for failures := 0; failures < 60; failures++ {
		_, _, d := b.next(failures, 0, 0.5)
		if d > 30*time.Second {
			t.Fatalf("after %d failures the delay is %v, over the 30s cap", failures, d)
		}
	}
	if _, _, d := b.next(10, 0, 0.5); d != 30*time.Second {
		t.Fatalf("capped delay %v", d)
	}
	// The jitter stays within ±20 % of the capped delay.
	for _, rnd := range []float64{0, 0.25, 0.75, 0.999} {
		_, _, d := b.next(10, 0, rnd)
		if d < 24*time.Second || d > 36*time.Second {
			t.Fatalf("jittered delay %v out of bounds", d)
		}
	}
	// A zero initial delay restarts at once (tests use it; so may users).
	z := backoff{Initial: 0, Max: 0, MaxRestarts: 3}
	if _, ok, d := z.next(0, 0, 0.7); !ok || d != 0 {
		t.Fatalf("zero backoff: %v %v", ok, d)
	}
}

// TestBackoffDefaults: the default policy (config.DefaultRestart) restarts after 1, 2, 4, 8
// and 16 s, capped at 30 s, and gives up at the sixth failure in a row.
func TestBackoffDefaults(t *testing.T) {
	d := config.DefaultRestart
	b := backoff{Initial: d.Delay, Max: d.MaxDelay, Healthy: d.HealthyAfter, MaxRestarts: d.MaxRestarts}
	var got []time.Duration
	failures := 0
	for {
		n, again, delay := b.next(failures, time.Second, 0.5)
		if !again {
			break
		}
		failures = n
		got = append(got, delay)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	long := backoff{Initial: d.Delay, Max: d.MaxDelay, MaxRestarts: 100}
	if _, _, delay := long.next(7, time.Second, 0.5); delay != 30*time.Second {
		t.Errorf("the eighth delay is %v, want the 30s cap", delay)
	}
}
