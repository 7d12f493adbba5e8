package supervisor

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader, max int) (lines []string, flags []bool, sizes []int) {
	t.Helper()
	lr := newLineReader(r, max)
	for {
		line, truncated, n, err := lr.next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
		flags = append(flags, truncated)
		sizes = append(sizes, n)
	}
}

func TestLineReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		max   int
		lines []string
		cut   []bool
		sizes []int
	}{
		{"plain", "a\nbc\n", 10, []string{"a", "bc"}, []bool{false, false}, []int{1, 2}},
		{"empty lines", "\n\nx\n", 10, []string{"", "", "x"}, []bool{false, false, false}, []int{0, 0, 1}},
		{"unterminated last line", "a\nlast", 10, []string{"a", "last"}, []bool{false, false}, []int{1, 4}},
		{"long line cut", "0123456789abcdef\nok\n", 4, []string{"0123", "ok"}, []bool{true, false}, []int{16, 2}},
		{"long unterminated line cut", "0123456789", 4, []string{"0123"}, []bool{true}, []int{10}},
		{"exactly max", "0123\n", 4, []string{"0123"}, []bool{false}, []int{4}},
	}
	for _, tt := range tests {
		for _, one := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.in)
			if one {
				r = iotest.OneByteReader(r) // lines split across reads
			}
			lines, cut, sizes := readAll(t, r, tt.max)
			if strings.Join(lines, "|") != strings.Join(tt.lines, "|") {
				t.Errorf("%s (one byte reads %v): lines %q, want %q", tt.name, one, lines, tt.lines)
			}
			for i := range cut {
				if i < len(tt.cut) && (cut[i] != tt.cut[i] || sizes[i] != tt.sizes[i]) {
					t.Errorf("%s: line %d cut=%v size=%d, want %v %d", tt.name, i, cut[i], sizes[i], tt.cut[i], tt.sizes[i])
				}
			}
		}
	}
}

// TestLineReaderBoundedMemory feeds a 50 MB line without a newline: the reader keeps only its
// cap (R24).
func TestLineReaderBoundedMemory(t *testing.T) {
	const size = 50 << 20
	r := io.LimitReader(zeros{}, size)
	lr := newLineReader(r, MaxLine)
	line, truncated, n, err := lr.next()
	if err != nil || !truncated || n != size || len(line) != MaxLine {
		t.Fatalf("got len %d truncated %v n %d err %v", len(line), truncated, n, err)
	}
	if cap(lr.line) > 2*MaxLine {
		t.Fatalf("buffer grew to %d bytes", cap(lr.line))
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

func TestLineReaderTee(t *testing.T) {
	var raw bytes.Buffer
	lr := newLineReader(strings.NewReader("a\nb\n"), 10)
	lr.tee = func(p []byte) { raw.Write(p) }
	for {
		if _, _, _, err := lr.next(); err != nil {
			break
		}
	}
	if raw.String() != "a\nb\n" {
		t.Fatalf("tee saw %q", raw.String())
	}
}
