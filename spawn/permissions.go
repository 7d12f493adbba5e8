package spawn

import (
	"agt/spawn/ctl"
	"agt/state"
)

// Permissions returns the requests a's inbox holds, in no order (see ctl.Permissions).
func Permissions(a *state.Agent) []Permission { return ctl.Permissions(a) }

// Waiting is what an agent waits on a person for (see ctl.Waiting).
type Waiting = ctl.Waiting

// WaitingFor says what a waits on a person for, from its status st and its inbox; nil when it
// waits for nobody (see ctl.WaitingFor).
func WaitingFor(a *state.Agent, st *state.Status) *Waiting { return ctl.WaitingFor(a, st) }
