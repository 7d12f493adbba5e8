package supervisor

import (
	"bytes"
	"io"
)

// MaxLine is the longest line the supervisor keeps whole. A longer line is cut to this size and
// flagged, so a 10 MB line without a newline cannot grow the supervisor (R24).
const MaxLine = 1 << 20

// lineReader splits a stream into lines with bounded memory: its buffer never grows past
// max+chunk bytes, whatever the input.
type lineReader struct {
	r     io.Reader
	tee   func([]byte) // sees every chunk read, before it is split
	max   int
	buf   []byte // unread bytes
	chunk []byte // read buffer
	line  []byte // the line being assembled when it spans reads
	total int    // bytes of the current line seen so far, kept or not
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: r, max: max, chunk: make([]byte, 64<<10)}
}

// next returns the next line without its newline, whether it was cut, and its full length.
// The returned slice is valid until the next call. At EOF a final unterminated line is returned
// once; then io.EOF.
func (l *lineReader) next() (line []byte, truncated bool, n int, err error) {
	for {
		if i := bytes.IndexByte(l.buf, '\n'); i >= 0 {
			part := l.buf[:i]
			l.buf = l.buf[i+1:]
			if l.total == 0 {
				if len(part) > l.max {
					return part[:l.max], true, len(part), nil
				}
				return part, false, len(part), nil
			}
			return l.finish(part)
		}
		// No newline in what we have: keep what fits, count the rest.
		l.keep(l.buf)
		l.buf = nil
		m, rerr := l.r.Read(l.chunk)
		l.buf = l.chunk[:m]
		if m > 0 && l.tee != nil {
			l.tee(l.buf)
		}
		if rerr != nil && m == 0 {
			if l.total > 0 {
				return l.finish(nil)
			}
			return nil, false, 0, rerr
		}
	}
}

// more reports whether a complete line is buffered, so next will not block.
func (l *lineReader) more() bool { return bytes.IndexByte(l.buf, '\n') >= 0 }

func (l *lineReader) keep(p []byte) {
	l.total += len(p)
	if room := l.max - len(l.line); room > 0 {
		if len(p) > room {
			p = p[:room]
		}
		l.line = append(l.line, p...)
	}
}

func (l *lineReader) finish(part []byte) ([]byte, bool, int, error) {
	l.keep(part)
	line, n := l.line, l.total
	l.line, l.total = l.line[:0], 0
	if cap(l.line) > 2*len(l.chunk) {
		l.line = nil // do not hold on to a huge buffer between long lines
	}
	return line, n > len(line), n, nil
}
