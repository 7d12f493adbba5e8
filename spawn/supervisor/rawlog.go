package supervisor

import (
	"os"

	"agt/state"
)

// rawLogCap is the size at which stdout.log and stderr.log rotate to a single ".1" file, so the
// raw copies of an agent's output never take more than twice this much disk.
const rawLogCap = 8 << 20

// cappedLog is a raw output log that rotates by rename when it grows past its cap. Failures are
// ignored: the raw copy is a convenience and must never hold up the agent.
type cappedLog struct {
	path string
	max  int64
	f    *os.File
	size int64
}

func openCapped(path string, max int64) *cappedLog {
	l := &cappedLog{path: path, max: max}
	l.open()
	return l
}

func (l *cappedLog) open() {
	f, err := state.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // never through a link (R27)
	if err != nil {
		return
	}
	l.f = f
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
}

// Write appends a chunk of raw output, rotating first when the file is over its cap.
func (l *cappedLog) Write(p []byte) {
	if l.f == nil {
		return
	}
	if l.size >= l.max {
		l.f.Close()
		l.f = nil
		os.Rename(l.path, l.path+state.RotatedSuffix)
		l.open()
		if l.f == nil {
			return
		}
		l.size = 0
	}
	n, _ := l.f.Write(p)
	l.size += int64(n)
}

func (l *cappedLog) Close() {
	if l.f != nil {
		l.f.Close()
	}
}
