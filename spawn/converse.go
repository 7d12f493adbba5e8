package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"agt/state"
	"agt/stream"
)

// A conversation agent (stdin = "stream-json": Claude's stream-json input with the control
// protocol on the same pipe) takes its turns as user messages on stdin, and its permission
// requests are answered there. The supervisor is the one writer of that pipe; the control
// channel brings it what to write.

// Permission is a permission request an agent waits on, as its event had it and as its inbox
// file (permissions/ID.json) holds it.
type Permission struct {
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`
	Seq     int64           `json:"seq"`
	TS      time.Time       `json:"ts"`
}

// maxPermissions bounds the permission requests kept: an agent cannot ask more at once.
const maxPermissions = 256

// control carries out a request of the control channel.
func (s *supervisor) control(req Request) Reply {
	switch req.Op {
	case OpSend:
		return s.conv.send(req)
	case OpApprove, OpDeny:
		return s.conv.answer(req)
	case OpInterrupt:
		return s.conv.interrupt()
	case OpAfterTurn:
		return s.conv.endAfterTurn()
	case OpKeys:
		return s.conv.keys(req.Text)
	}
	return Reply{Error: fmt.Sprintf("unknown request %q; want send, approve, deny or interrupt", req.Op)}
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
func (s *supervisor) pendingLocked(id string) (*Permission, string) {
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
	p := &Permission{ID: ev.ID, Tool: ev.Tool, Input: ev.Input, Options: ev.Options, Seq: ev.Seq, TS: ev.TS}
	if s.perms == nil {
		s.perms = make(map[string]*Permission)
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

// Permissions returns the requests a's inbox holds, in no order. A file that is not a regular
// one of at most 1 MiB (a link, a FIFO) is skipped, never followed or waited on (state.ReadSmall).
func Permissions(a *state.Agent) []Permission {
	dir := a.Path(state.PermissionsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // none asked
	}
	var out []Permission
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := state.ReadSmall(filepath.Join(dir, e.Name()))
		var p Permission
		if err == nil && json.Unmarshal(b, &p) == nil && p.ID != "" {
			out = append(out, p)
		}
	}
	return out
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
