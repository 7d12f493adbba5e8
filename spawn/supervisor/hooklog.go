package supervisor

import (
	"fmt"
	"os"
	"sync"

	"agt/state"
)

// A hook's output goes to supervisor.log, bounded: one run writes at most hookOutputMax bytes
// there (what is past it is read, counted and dropped, so the hook never blocks on a full
// pipe), and the log is rotated to supervisor.log.1 past supervisorLogMax. A hook that wrote
// 50 MB once filled the disk with it.
const (
	hookOutputMax    = 64 << 10
	supervisorLogMax = 1 << 20
)

// hookLog is where hooks' output goes: the supervisor's log, which is its stderr.
type hookLog struct {
	path string     // supervisor.log
	mu   sync.Mutex // one copier writes or rotates at a time
}

// pipe returns the write end to give a hook as its stdout and stderr; what the hook writes
// there is copied into the log until it (and whatever holds the pipe) closes it.
func (l *hookLog) pipe(what string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go l.copy(r, what)
	return w, nil
}

func (l *hookLog) copy(r *os.File, what string) {
	defer r.Close()
	buf := make([]byte, 32<<10)
	written, dropped := 0, int64(0)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			keep := min(n, hookOutputMax-written)
			if keep > 0 {
				l.mu.Lock()
				os.Stderr.Write(buf[:keep])
				l.mu.Unlock()
				written += keep
			}
			dropped += int64(n - keep)
		}
		if err != nil {
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if dropped > 0 {
		fmt.Fprintf(os.Stderr, "\nagt supervise: %s wrote %d bytes more than the %d kept; dropped\n", what, dropped, hookOutputMax)
	}
	l.rotate()
}

// rotate moves supervisor.log to supervisor.log.1 once it is past supervisorLogMax, and logs to
// a new one: the process's stderr is the log only when it is that very file.
func (l *hookLog) rotate() {
	if l.path == "" {
		return
	}
	cur, err1 := os.Stderr.Stat()
	named, err2 := os.Lstat(l.path)
	if err1 != nil || err2 != nil || !os.SameFile(cur, named) || cur.Size() <= supervisorLogMax {
		return
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise: rotate %s: %v\n", l.path, err)
		return
	}
	if err := logTo(l.path); err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise: %v\n", err) // still the old file: nothing lost
	}
}

// logPath is the supervisor log of agent name.
func logPath(root, name string) string {
	return (&state.Dir{Root: root}).AgentFile(name, state.SupervisorLog)
}
