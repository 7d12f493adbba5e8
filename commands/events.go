package commands

import (
	"bytes"
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
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil
	}
	const block, limit = 64 << 10, 8 << 20
	var cut []byte // the line the last block began inside of: its end
	for off := end; off > 0 && end-off < limit; {
		n := min(off, block)
		off -= n
		chunk := make([]byte, n, int(n)+len(cut))
		if _, err := f.ReadAt(chunk, off); err != nil {
			return nil
		}
		chunk = append(chunk, cut...)
		// Each block is split once: its first line may be cut short (unless off is 0), and
		// is kept to be completed by the next block; the others are whole.
		lines := bytes.Split(bytes.TrimRight(chunk, "\n"), []byte{'\n'})
		first := 0
		if off > 0 {
			cut, first = lines[0], 1
		}
		for i := len(lines) - 1; i >= first; i-- {
			l := lines[i]
			if gjson.GetBytes(l, "type").String() == "state" && gjson.ValidBytes(l) {
				return append([]byte(nil), l...)
			}
		}
	}
	return nil
}
