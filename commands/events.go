package commands

import (
	"bytes"
	"io"
	"os"

	"github.com/tidwall/gjson"

	"agt/state"
)

// lastStateEvent returns the last state event in a's log, reading backwards from the end in
// blocks so that a long log costs no more than its tail. nil when there is none.
func lastStateEvent(a *state.Agent) []byte {
	f, err := os.Open(a.Path(state.EventsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil
	}
	const block = 64 << 10
	var tail []byte // bytes from some offset to end
	for off := end; off > 0 && len(tail) < 8<<20; {
		n := int64(block)
		if off < n {
			n = off
		}
		off -= n
		buf := make([]byte, n, int(n)+len(tail))
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil
		}
		tail = append(buf, tail...)
		// Lines wholly inside tail (the first may be cut unless off is 0).
		lines := bytes.Split(bytes.TrimRight(tail, "\n"), []byte{'\n'})
		for i := len(lines) - 1; i >= 0; i-- {
			if i == 0 && off > 0 {
				break
			}
			l := lines[i]
			if gjson.GetBytes(l, "type").String() == "state" && gjson.ValidBytes(l) {
				return append([]byte(nil), l...)
			}
		}
	}
	return nil
}
