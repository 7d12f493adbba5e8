package supervisor

import "time"

// restartJitter is the ± share of randomness in each backoff delay (RELIABILITY.md R17). The
// policy names and defaults are config's.
const restartJitter = 0.2

// backoff decides restarts: the delay before each, when the count of failures in a row resets,
// and when to give up. It is pure: the clock and the randomness are passed in.
type backoff struct {
	Initial, Max time.Duration // the first delay, doubling up to Max
	Healthy      time.Duration // a run at least this long resets the count
	MaxRestarts  int           // failures in a row after which we give up
}

// next returns the failures in a row counting this one (reset when the run that just ended was
// healthy), whether to restart, and the delay before it. rnd is uniform in [0, 1) and spreads
// the delay by ±20 % so that agents that fail together do not restart together.
func (b backoff) next(failures int, ran time.Duration, rnd float64) (n int, restart bool, delay time.Duration) {
	if b.Healthy > 0 && ran >= b.Healthy {
		failures = 0
	}
	n = failures + 1
	if n > b.MaxRestarts {
		return n, false, 0
	}
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	d = time.Duration(float64(d) * (1 + restartJitter*(2*rnd-1)))
	return n, true, d
}
