package spawn

import "agt/spawn/ctl"

// What the commands know of package ctl, under spawn's names: the client's API is spawn's.

// Names of the control channel, as the commands know them.
type (
	Request    = ctl.Request
	Reply      = ctl.Reply
	Permission = ctl.Permission
)

// Ops of the control channel.
const (
	OpSend      = ctl.OpSend
	OpApprove   = ctl.OpApprove
	OpDeny      = ctl.OpDeny
	OpInterrupt = ctl.OpInterrupt
	OpAfterTurn = ctl.OpAfterTurn
	OpKeys      = ctl.OpKeys
	OpAttach    = ctl.OpAttach
)

// How a supervisor starts its agent (see ctl.StartNew).
const (
	StartNew    = ctl.StartNew
	StartResume = ctl.StartResume
	StartFresh  = ctl.StartFresh
)

// ReasonSurvivors is the reason of an agent failed because part of its tree outlived SIGKILL.
const ReasonSurvivors = ctl.ReasonSurvivors

// RecordEnviron is env as the spec keeps it (see ctl.RecordEnviron).
func RecordEnviron(env []string) []string { return ctl.RecordEnviron(env) }

// NewSessionID returns a random (version 4) UUID.
func NewSessionID() string { return ctl.NewSessionID() }

// TestHooks are the hooks that tests set (see ctl.TestHooks); the real binary never does.
var TestHooks = &ctl.Test
