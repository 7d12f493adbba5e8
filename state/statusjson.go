package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"
)

// The status reader is on the hot path of `agt ps`, which reads one status.json per agent from
// a shell prompt. It reads with plain system calls (no poller set-up, no fstat) and decodes
// with gjson instead of encoding/json's reflection: about a fifth of the cost per agent. The
// result is the same as json.Unmarshal's for every document Status marshals to (see the tests).

// ReadSmall reads a small file of the run directory as readSmall does: never through a link,
// never waiting on a FIFO (which reads empty), at most 1 MiB.
func ReadSmall(path string) ([]byte, error) { return readSmall(path, nil) }

// readSmall reads a whole small file with open, read and close, into b when it is large
// enough: a caller that does not keep the bytes passes a buffer on its stack.
func readSmall(path string, b []byte) ([]byte, error) { return readCapped(path, b, maxSmall) }

// readCapped is readSmall for files of at most limit bytes.
func readCapped(path string, b []byte, limit int) ([]byte, error) {
	fd, err := openRetry(path)
	if err != nil {
		if err == unix.ELOOP {
			err = errSymlink
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b = b[:0]
	for {
		if len(b) >= limit {
			return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("larger than %d MiB", limit>>20)}
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		short := n < cap(b)-len(b)
		b = b[:len(b)+n]
		if short {
			// A regular file reads short only at its end: no need to ask again (a
			// status.json is replaced by rename, never written in place).
			return b, nil
		}
	}
}

// maxSmall bounds what readSmall reads: a status.json is a few hundred bytes, and an endless
// file must not grow agt ps without bound.
const maxSmall = 1 << 20

// maxSpec bounds spec.json, which holds the spawn's argv and environment (a few MiB at most).
const maxSpec = 16 << 20

func openRetry(path string) (int, error) {
	for {
		// Never through a link (status.json → /dev/zero), never waiting on a FIFO.
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// errStatusType says a field of status.json has the wrong JSON type.
var errStatusType = errors.New("wrong type")

// decodeStatus parses a status.json document into s.
func decodeStatus(b []byte, s *Status) error {
	if !gjson.ValidBytes(b) {
		return errors.New("not valid JSON")
	}
	root := gjson.ParseBytes(b)
	if !root.IsObject() {
		return errors.New("not a JSON object")
	}
	var err error
	fail := func(key string, e error) bool {
		err = fmt.Errorf("field %q: %w", key, e)
		return false
	}
	root.ForEach(func(k, v gjson.Result) bool {
		key := k.Str
		var e error
		switch key {
		case "v":
			s.V, e = jsonInt(v)
		case "name":
			s.Name, e = jsonStr(v)
		case "kind":
			s.Kind, e = jsonStr(v)
		case "state":
			s.State, e = jsonStr(v)
		case "reason":
			s.Reason, e = jsonStr(v)
		case "error":
			s.Error, e = jsonStr(v)
		case "since":
			e = jsonTime(v, &s.Since)
		case "started":
			e = jsonTime(v, &s.Started)
		case "updated":
			e = jsonTime(v, &s.Updated)
		case "pid":
			s.PID, e = jsonInt(v)
		case "supervisor_pid":
			s.SupervisorPID, e = jsonInt(v)
		case "instance":
			s.Instance, e = jsonStr(v)
		case "restarts":
			s.Restarts, e = jsonInt(v)
		case "exit_code":
			s.ExitCode, e = jsonIntPtr(v)
		case "signal":
			s.Signal, e = jsonStr(v)
		case "session_id":
			s.SessionID, e = jsonStr(v)
		case "resumable":
			s.Resumable, e = jsonBool(v)
		case "model":
			s.Model, e = jsonStr(v)
		case "activity":
			e = jsonTime(v, &s.Activity)
		case "doing":
			s.Doing, e = jsonStr(v)
		case "turns":
			s.Turns, e = jsonInt(v)
		case "cost_usd":
			s.CostUSD, e = jsonFloatPtr(v)
		case "max_cost":
			var f *float64
			if f, e = jsonFloatPtr(v); f != nil {
				s.MaxCost = *f
			}
		case "usage":
			e = decodeUsage(v, &s.Usage)
		case "session_total":
			e = decodeUsage(v, &s.SessionTotal)
		case "last_seq":
			s.LastSeq, e = jsonInt64(v)
		case "dropped":
			s.Dropped, e = jsonInt64(v)
		case "dir":
			s.Dir, e = jsonStr(v)
		case "workspace":
			s.Workspace = json.RawMessage(v.Raw)
		case "group":
			s.Group, e = jsonStr(v)
		case "history":
			e = decodeHistory(v, &s.History)
		}
		if e != nil {
			return fail(key, e)
		}
		return true
	})
	return err
}

func decodeUsage(v gjson.Result, u *Usage) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return errStatusType
	}
	var err error
	v.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			u.InputTokens, err = jsonInt64(v)
		case "output_tokens":
			u.OutputTokens, err = jsonInt64(v)
		case "cache_read_tokens":
			u.CacheReadTokens, err = jsonInt64(v)
		case "cache_write_tokens":
			u.CacheWriteTokens, err = jsonInt64(v)
		}
		return err == nil
	})
	return err
}

func decodeHistory(v gjson.Result, h *[]Exit) error {
	if v.Type == gjson.Null {
		*h = nil
		return nil
	}
	if !v.IsArray() {
		return errStatusType
	}
	var err error
	out := make([]Exit, 0, HistoryLen)
	v.ForEach(func(_, item gjson.Result) bool {
		var x Exit
		if item.Type != gjson.Null && !item.IsObject() {
			err = errStatusType
			return false
		}
		item.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "code":
				x.Code, err = jsonIntPtr(v)
			case "signal":
				x.Signal, err = jsonStr(v)
			case "at":
				err = jsonTime(v, &x.At)
			}
			return err == nil
		})
		out = append(out, x)
		return err == nil
	})
	*h = out
	return err
}

func jsonStr(v gjson.Result) (string, error) {
	switch v.Type {
	case gjson.String:
		if !utf8.ValidString(v.Str) {
			// As encoding/json does: each invalid byte becomes U+FFFD.
			var b strings.Builder
			for _, r := range v.Str {
				b.WriteRune(r)
			}
			return b.String(), nil
		}
		return v.Str, nil
	case gjson.Null:
		return "", nil
	}
	return "", errStatusType
}

func jsonBool(v gjson.Result) (bool, error) {
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null:
		return false, nil
	}
	return false, errStatusType
}

func jsonInt64(v gjson.Result) (int64, error) {
	switch v.Type {
	case gjson.Number:
		return strconv.ParseInt(v.Raw, 10, 64)
	case gjson.Null:
		return 0, nil
	}
	return 0, errStatusType
}

func jsonInt(v gjson.Result) (int, error) {
	n, err := jsonInt64(v)
	return int(n), err
}

func jsonIntPtr(v gjson.Result) (*int, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	n, err := jsonInt(v)
	return &n, err
}

func jsonFloatPtr(v gjson.Result) (*float64, error) {
	switch v.Type {
	case gjson.Null:
		return nil, nil
	case gjson.Number:
		f, err := strconv.ParseFloat(v.Raw, 64)
		return &f, err
	}
	return nil, errStatusType
}

// jsonTime reads an RFC 3339 time as time.Time's UnmarshalJSON does; null leaves t as is.
func jsonTime(v gjson.Result, t *time.Time) error {
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.String:
		return t.UnmarshalText([]byte(v.Str))
	}
	return errStatusType
}
