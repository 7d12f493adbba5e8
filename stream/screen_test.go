package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A screen redrawn cell by cell, as a full-screen program draws it, reads as it shows; a
// spinner that turns and a clock that ticks leave its Mark as it was, new words change it.
func TestScreen(t *testing.T) {
	s := NewScreen(40, 6)
	s.Write([]byte("\x1b[2J\x1b[H✻ Thinking… (1s · esc to interrupt)\r\n\r\n❯ \x1b[K"))
	want := "✻ Thinking… (1s · esc to interrupt)\n\n❯"
	if got := s.Text(); got != want {
		t.Fatalf("Text %q, want %q", got, want)
	}
	mark := Mark(s.Text())
	// The spinner turns and the clock ticks: only those cells are drawn again.
	s.Write([]byte("\x1b[1;1H✶\x1b[1;14H12s · esc to interrupt)"))
	if got := s.Text(); !strings.HasPrefix(got, "✶ Thinking… (12s · esc") {
		t.Fatalf("after a tick: %q", got)
	}
	if Mark(s.Text()) != mark {
		t.Errorf("a tick changed the mark:\n%q\n%q", mark, Mark(s.Text()))
	}
	// A dot that blinks beside a tool is no work either.
	s.Write([]byte("\x1b[2;1H●"))
	blinked := Mark(s.Text())
	s.Write([]byte("\x1b[2;1H "))
	if Mark(s.Text()) != blinked {
		t.Error("a blinking dot changed the mark")
	}
	mark = blinked
	// New words are work.
	s.Write([]byte("\x1b[2;1H⏺ The tool said: ok"))
	if Mark(s.Text()) == mark {
		t.Error("new words left the mark as it was")
	}
	s.Resize(20, 3)
	if len(strings.Split(s.Text(), "\n")) > 3 {
		t.Errorf("after a resize: %q", s.Text())
	}
}

// The sequences a screen follows, each against what a terminal shows.
func TestScreenSequences(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"lines scroll off the top", "1\r\n2\r\n3\r\n4", "2\n3\n4"},
		{"a long line wraps", "abcdefghij", "abcdef\nghij"},
		{"cursor moves and erases", "hello\x1b[3D\x1b[K!", "he!"},
		{"erase the screen and go home", "a\r\nb\x1b[2J\x1b[Hc", "c"},
		{"erase to the start", "abcdef\x1b[1;3H\x1b[1K", "   def"},
		{"up, then write over", "one\r\ntwo\x1b[1A\rONE", "ONE\ntwo"},
		{"a column and a row", "\x1b[2d\x1b[3Gx", "\n  x"},
		{"erase characters", "abcdef\x1b[1;2H\x1b[2X", "a  def"},
		{"delete and insert characters", "abcdef\x1b[1;2H\x1b[2P\x1b[1@", "a def"},
		{"a scroll region", "\x1b[2;3rtop\x1b[3;1H1\r\n2\r\n3", "top\n2\n3"},
		{"reverse index at the top scrolls down", "a\x1b[H\x1bMb", "b\na"},
		{"insert and delete lines", "1\r\n2\r\n3\x1b[2;1H\x1b[1L", "1\n\n2"},
		{"wide characters take two cells", "日本x", "日本x"},
		{"the alternate screen, and back", "main\x1b[?1049hALT\x1b[?1049l", "main"},
		{"titles, colours and modes are dropped", "\x1b]0;title\x07\x1b[1;31mred\x1b[0m\x1b[?25l\x1b(B", "red"},
		{"save and restore the cursor", "ab\x1b7\r\nxy\x1b8c", "abc\nxy"},
		{"C1 controls in UTF-8 are sequences, not text", "a\u009b2J\u009b1;1Hb\u009d0;title\x07", "b"},
	} {
		s := NewScreen(6, 3)
		s.Write([]byte(tt.in))
		if got := s.Text(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	// Whatever the size asked for, the screen is bounded.
	s := NewScreen(1<<16, 1<<16)
	if len(s.lines) > maxScreenRows || len(s.lines[0]) > maxScreenCols {
		t.Errorf("a screen of %dx%d", len(s.lines[0]), len(s.lines))
	}
}

func FuzzScreen(f *testing.F) {
	f.Add([]byte("\x1b[2;3r\x1b[5L\x1b[99M\x1bM日本\x1b[?1049h\x1b[3@\x1b[9P"), 5, 3)
	f.Fuzz(func(t *testing.T, data []byte, cols, rows int) {
		s := NewScreen(cols%200, rows%100)
		s.Write(data)
		cols, rows = (cols/7)%70, (rows/7)%50
		s.Resize(cols, rows)
		s.Write(data)
		text := s.Text()
		if n := strings.Count(text, "\n") + 1; text != "" && n > max(rows, 1) {
			t.Fatalf("%d rows on a screen of %d", n, rows)
		}
		Mark(text)
	})
}

// BenchmarkScreenChunk is the cost a terminal agent's supervisor pays per chunk of its output
// for its state: the chunk into the screen, the screen's text and its Mark. The chunks are
// Claude's TUI under a hung request (its spinner and clock), as captured.
func BenchmarkScreenChunk(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "terminal", "claude_hang.tty"))
	if err != nil {
		b.Fatal(err)
	}
	s := NewScreen(80, 24)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for c := range slices.Chunk(data, 256) {
			s.Write(c)
			Mark(s.Text())
		}
	}
}

// BenchmarkScreenFlood is a program that floods its terminal: lines that scroll, in the
// 32 KiB chunks the supervisor reads, each followed by the screen's text and Mark.
func BenchmarkScreenFlood(b *testing.B) {
	data := bytes.Repeat([]byte("ok 123 a line of a build's output that scrolls past quickly\r\n"), 16384)
	s := NewScreen(80, 24)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for c := range slices.Chunk(data, 32<<10) {
			s.Write(c)
			Mark(s.Text())
		}
	}
}

// BenchmarkTermTextFlood is the same flood through TermText alone (the output events), for
// comparison.
func BenchmarkTermTextFlood(b *testing.B) {
	data := bytes.Repeat([]byte("ok 123 a line of a build's output that scrolls past quickly\r\n"), 16384)
	var tt TermText
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for c := range slices.Chunk(data, 32<<10) {
			tt.Write(c, func([]byte, bool, int) {})
		}
	}
}
