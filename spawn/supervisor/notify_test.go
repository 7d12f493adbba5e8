package supervisor

import (
	"testing"
	"time"

	"agt/stream"
)

// TestBucket: a burst of three, then one per interval; an idle spell refills it, never past
// the burst.
func TestBucket(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := bucket{burst: 3, every: 10 * time.Second, tokens: 3}
	for i, step := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {time.Second, true}, {2 * time.Second, true}, // the burst
		{3 * time.Second, false}, {9 * time.Second, false}, // spent
		{13 * time.Second, true}, {14 * time.Second, false}, // one more after 10 s
		{10 * time.Minute, true}, {10 * time.Minute, true}, {10 * time.Minute, true}, {10 * time.Minute, false}, // refilled to 3, not more
	} {
		if got := b.take(t0.Add(step.at)); got != step.want {
			t.Errorf("step %d at %v: take = %v, want %v", i, step.at, got, step.want)
		}
	}
}

// TestWorth: a person hears when an agent starts to wait for them, and when it fails; not of
// every turn of a wait, nor of work.
func TestWorth(t *testing.T) {
	for _, tc := range []struct {
		prev, to string
		want     bool
	}{
		{stream.Running, stream.Waiting, true},
		{stream.Starting, stream.Failed, true},
		{stream.Restarting, stream.Failed, true},
		{stream.Waiting, stream.Waiting, false}, // another reason of the same wait
		{stream.Stale, stream.Waiting, false},
		{stream.Waiting, stream.Running, false},
		{stream.Running, stream.Exited, false},
		{stream.Stopping, stream.Stopped, false},
	} {
		if got := worth(tc.prev, tc.to, ""); got != tc.want {
			t.Errorf("worth(%s → %s) = %v, want %v", tc.prev, tc.to, got, tc.want)
		}
	}
}

// TestMarkupSafe: agent text in a notification body is one line with no markup and no
// controls.
func TestMarkupSafe(t *testing.T) {
	got := markupSafe("rm <b>x</b> && \x1b]52;c;aGk=\x07 y\nsecond")
	want := "rm &lt;b&gt;x&lt;/b&gt; &amp;&amp;  ]52;c;aGk=  y …"
	if got != want {
		t.Errorf("markupSafe = %q, want %q", got, want)
	}
}
