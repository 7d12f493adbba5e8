package workspace

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// FileStat is one file of a change: its path, how it changed (A added, D deleted, M modified,
// R renamed), and the lines it gained and lost (none counted for a binary file).
type FileStat struct {
	Path       string `json:"path"`
	Status     string `json:"status"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
}

// maxHeaderLine bounds the lines patchScanner holds whole: those outside hunks, which git and
// jj write themselves (file names, modes), and hunk headers. Content lines are never held.
const maxHeaderLine = 64 << 10

// patchScanner reads a Git-format diff as it is written to it, from git diff or jj diff --git:
// it counts each file's added and removed lines, drops the sections of the files drop names,
// and passes the rest on to w (nil: nowhere). Its memory is bounded whatever the diff holds:
// content lines, however long, stream through.
type patchScanner struct {
	w      io.Writer
	drop   func(path string) bool
	files  []FileStat
	skip   bool   // the current file's section is dropped
	inHunk bool   // past the file's first @@
	line   []byte // the line being held, up to maxHeaderLine
	stream bool   // inside a content line, passing it on until its end
	err    error
}

// Write takes the next bytes of the diff. It fails only when w does.
func (s *patchScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && s.err == nil {
		if s.stream {
			i := bytes.IndexByte(p, '\n')
			chunk := p
			if i >= 0 {
				chunk, s.stream = p[:i+1], false
			}
			s.emit(chunk)
			p = p[len(chunk):]
			continue
		}
		if len(s.line) == 0 && s.inHunk && (p[0] == '+' || p[0] == '-' || p[0] == ' ' || p[0] == '\\') {
			s.count(p[0])
			s.stream = true
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxHeaderLine - len(s.line)
			if len(p) < room {
				s.line = append(s.line, p...)
				return n, s.err
			}
			// Too long for a header: whatever it is, it is passed on as it comes.
			s.line = append(s.line, p[:room]...)
			p = p[room:]
			s.process()
			s.stream = true
			continue
		}
		s.line = append(s.line, p[:i+1]...)
		p = p[i+1:]
		s.process()
	}
	return n, s.err
}

// Close handles a last line without a newline.
func (s *patchScanner) Close() error {
	if len(s.line) > 0 {
		s.process()
	}
	return s.err
}

// process handles the held line and empties it.
func (s *patchScanner) process() {
	line := s.line
	s.line = s.line[:0]
	text := strings.TrimSuffix(string(line), "\n")
	switch {
	case strings.HasPrefix(text, "diff --git "):
		s.files = append(s.files, FileStat{Path: headerPath(text[len("diff --git "):]), Status: "M"})
		s.inHunk = false
		s.skip = s.drop != nil && s.drop(s.files[len(s.files)-1].Path)
		if s.skip {
			s.files = s.files[:len(s.files)-1]
		}
	case strings.HasPrefix(text, "@@"):
		s.inHunk = true
	case s.inHunk:
		if len(text) > 0 {
			s.count(text[0])
		}
	case len(s.files) == 0 || s.skip:
	case strings.HasPrefix(text, "new file mode"):
		s.cur().Status = "A"
	case strings.HasPrefix(text, "deleted file mode"):
		s.cur().Status = "D"
	case strings.HasPrefix(text, "rename to "):
		s.cur().Status, s.cur().Path = "R", unquote(text[len("rename to "):])
	case strings.HasPrefix(text, "Binary files ") || text == "GIT binary patch":
		s.cur().Binary = true
	}
	s.emit(line)
}

// count counts a content line by its first byte.
func (s *patchScanner) count(b byte) {
	if s.skip || len(s.files) == 0 {
		return
	}
	switch b {
	case '+':
		s.cur().Insertions++
	case '-':
		s.cur().Deletions++
	}
}

func (s *patchScanner) cur() *FileStat { return &s.files[len(s.files)-1] }

func (s *patchScanner) emit(b []byte) {
	if s.w != nil && !s.skip && s.err == nil {
		_, s.err = s.w.Write(b)
	}
}

// headerPath is the path of a "diff --git a/P b/P" header: the b side, quoted or not. For an
// unquoted rename, whose halves differ, the "rename to" line that follows says better.
func headerPath(rest string) string {
	if strings.HasPrefix(rest, `"`) {
		if a, err := strconv.QuotedPrefix(rest); err == nil {
			return strings.TrimPrefix(unquote(strings.TrimSpace(rest[len(a):])), "b/")
		}
	}
	if l := (len(rest) - 5) / 2; l > 0 && len(rest) == 2*l+5 && rest[2:2+l] == rest[5+l:] {
		return rest[5+l:]
	}
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

// unquote reads a path as git writes it: C-quoted when it holds special bytes.
func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}
