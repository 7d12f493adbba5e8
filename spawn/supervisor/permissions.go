package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// maxPermissions and maxPermissionBytes bound the permission requests kept (R36): an agent
// cannot ask more at once; a request past either is denied at once (inboxFullLocked).
const (
	maxPermissions     = 256
	maxPermissionBytes = 16 << 20
)

// inboxFullLocked says why the request ev cannot join those waiting for an answer; "" when it
// can.
func (s *supervisor) inboxFullLocked(ev *stream.Event) string {
	if len(s.perms) >= maxPermissions {
		return fmt.Sprintf("%d requests wait for an answer already", len(s.perms))
	}
	n := len(ev.Input) + len(ev.Options)
	for _, p := range s.perms {
		n += len(p.Input) + len(p.Options)
	}
	if n > maxPermissionBytes {
		return fmt.Sprintf("the requests waiting for an answer would hold more than %d MiB", maxPermissionBytes>>20)
	}
	return ""
}

// control carries out a request of the control channel.
func (s *supervisor) control(req ctl.Request) ctl.Reply {
	switch req.Op {
	case ctl.OpSend:
		return s.conv.send(req)
	case ctl.OpApprove, ctl.OpDeny:
		return s.conv.answer(req)
	case ctl.OpInterrupt:
		return s.conv.interrupt()
	case ctl.OpAfterTurn:
		return s.conv.endAfterTurn()
	case ctl.OpKeys:
		return s.conv.keys(req.Text)
	}
	return ctl.Reply{Error: fmt.Sprintf("unknown request %q; want send, approve, deny or interrupt", req.Op)}
}

func (s *supervisor) waitingForInputLocked() bool {
	return (s.snap.State == stream.Waiting || s.snap.State == stream.Stale) && s.snap.Reason == stream.ReasonInput
}

// beginLocked opens a turn: the agent is running from its message on.
func (s *supervisor) beginLocked(now time.Time) {
	if s.moveLocked(s.machine.Begin(s.snap, now), now) {
		s.writeStatusLocked()
	}
}

// pendingLocked finds the request id names, or the only one pending when id is "".
func (s *supervisor) pendingLocked(id string) (*ctl.Permission, string) {
	if id != "" {
		if p, ok := s.perms[id]; ok {
			return p, ""
		}
		return nil, fmt.Sprintf("%s has no pending permission request %q; 'agt permissions %s' lists them", s.spec.Name, id, s.spec.Name)
	}
	switch len(s.perms) {
	case 0:
		return nil, fmt.Sprintf("%s has no pending permission request", s.spec.Name)
	case 1:
		for _, p := range s.perms {
			return p, ""
		}
	}
	ids := make([]string, 0, len(s.perms))
	for id := range s.perms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return nil, fmt.Sprintf("%s has %d pending permission requests (%s); name one", s.spec.Name, len(ids), strings.Join(ids, ", "))
}

func (s *supervisor) waitingForPermissionLocked() bool {
	return (s.snap.State == stream.Waiting || s.snap.State == stream.Stale) &&
		(s.snap.Reason == stream.ReasonPermission || s.snap.Reason == stream.ReasonPlan)
}

// askedLocked records a permission request the agent waits on, in memory and as a file of the
// agent's inbox (permissions/ID.json), so that any tool can list what waits across agents.
func (s *supervisor) askedLocked(ev *stream.Event) {
	if ev.ID == "" || len(s.perms) >= maxPermissions {
		return
	}
	p := &ctl.Permission{ID: ev.ID, Tool: ev.Tool, Input: ev.Input, Options: ev.Options, Seq: ev.Seq, TS: ev.TS}
	if s.perms == nil {
		s.perms = make(map[string]*ctl.Permission)
	}
	s.perms[ev.ID] = p
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	name, ok := permissionFile(ev.ID)
	if !ok {
		return
	}
	dir := s.a.Path(state.PermissionsDir)
	os.Mkdir(dir, 0o700)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %s is not a directory (a link?); the request is not in the inbox\n", s.spec.Name, dir)
		return
	}
	if err := state.WriteFileAtomic(filepath.Join(dir, name), b); err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", s.spec.Name, err)
	}
}

// permissionFile is the inbox file of a request id: ids are the agent's, so only safe ones
// name a file.
func permissionFile(id string) (string, bool) {
	if id == "" || len(id) > 200 || strings.HasPrefix(id, ".") {
		return "", false
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	return id + ".json", true
}

func (s *supervisor) removePermission(id string) {
	if name, ok := permissionFile(id); ok {
		os.Remove(filepath.Join(s.a.Path(state.PermissionsDir), name))
	}
}

// endPermissionsLocked clears the inbox at the end of a run: a request still pending is denied
// (the agent that asked is gone), and the log says so.
func (s *supervisor) endPermissionsLocked(now time.Time) {
	for id, p := range s.perms {
		ev := stream.Event{Type: stream.TypePermission, ID: p.ID, Tool: p.Tool, Input: p.Input, Options: p.Options, Decision: "deny"}
		s.appendLocked(&ev, now)
		delete(s.perms, id)
		s.removePermission(id)
	}
}
