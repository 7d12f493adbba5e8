package commands

import (
	"io"
	"os"

	"github.com/tidwall/gjson"

	"agt/state"
)

// lastStateEvent returns the last state event in a's log, reading backwards from the end in
// blocks so that a long log costs no more than its tail, and at most the last 8 MiB of it. nil
// when there is none.
func lastStateEvent(a *state.Agent) []byte {
	f, err := os.Open(a.Path(state.EventsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil
	}
	const block, limit = 64 << 10, 8 << 20
	// Each block is scanned once, backwards, for line ends. A line that lies in the block is
	// looked at there; one that began in an earlier block is read whole once its start is
	// found, so a line of megabytes costs one more read, not one copy per block.
	lineEnd := size // where the line being looked for ends (its '\n' excluded)
	buf := make([]byte, block)
	var line []byte
	for off := size; off > 0 && size-off < limit; {
		n := min(off, block)
		off -= n
		b := buf[:n]
		if _, err := f.ReadAt(b, off); err != nil {
			return nil
		}
		for i := len(b) - 1; i >= -1; i-- {
			if i >= 0 && b[i] != '\n' {
				continue
			}
			if i < 0 && off > 0 {
				break // the line goes on in the block before
			}
			start := off + int64(i) + 1
			switch {
			case start == lineEnd:
				line = nil
			case lineEnd <= off+n:
				line = b[i+1 : lineEnd-off]
			default:
				line = make([]byte, lineEnd-start)
				if _, err := f.ReadAt(line, start); err != nil {
					return nil
				}
			}
			if gjson.GetBytes(line, "type").String() == "state" && gjson.ValidBytes(line) {
				return append([]byte(nil), line...)
			}
			lineEnd = start - 1
		}
	}
	return nil
}
