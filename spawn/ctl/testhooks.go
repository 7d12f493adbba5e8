package ctl

import "time"

// TestHooks reach into agt where users never may: the clock, a full or slow disk, processes
// SIGKILL cannot reach. Nothing in agt sets them; the test binary does (main_test.go, from its
// AGT_TEST_* variables, which the real binary never reads). The zero value is agt as it runs.
type TestHooks struct {
	// GroupKillOnly switches the descendant and AGT_INSTANCE sweeps off, leaving only the
	// process-group kill: it proves that the tree tests can fail.
	GroupKillOnly bool
	// NoCgroup switches containment off: what the sweeps by pid do alone, and proof that the
	// tests of containment can fail.
	NoCgroup bool
	// RanFor, when set, is how long every run counts as having lasted: the clock of the
	// healthy-run reset, without waiting ten minutes.
	RanFor time.Duration
	// DiskFull, when set and true, makes event and status writes fail with ENOSPC.
	DiskFull func() bool
	// SlowStatus, when set, is called before each status write: a slow disk (a delayed fsync).
	SlowStatus func()
	// Unkillable, when set, names processes that SIGKILL cannot reach, as a process of another
	// user or one stuck in the kernel.
	Unkillable func(pid int) bool
	// Timeout, when set, is how long a control exchange may take instead of ctl.Timeout: a
	// wedged or slow supervisor without waiting seconds.
	Timeout time.Duration
	// Clock, when set, is the clock of the supervisor's state machine: the timing of a
	// terminal agent made exact instead of slept through.
	Clock func() time.Time
}

// Test holds the hooks in effect: none, but in tests.
var Test TestHooks
