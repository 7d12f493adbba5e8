package stream

import "unicode/utf8"

// termReader splits what a program writes to its terminal into what acts on the terminal:
// characters (UTF-8 decoded), control bytes, CSI sequences (their final byte, the parameters
// kept in params) and the byte after a lone ESC (ESC 7, ESC M…). Strings (OSC, DCS, SOS, PM,
// APC) and the intermediates of ESC sequences are read and dropped; a C1 control in its UTF-8
// form is taken as its 7-bit sequence (U+009B as ESC [), as a terminal reading UTF-8 may, and
// is never a character. TermText and Screen each read their output through one.
type termReader struct {
	st     termState
	params []byte // of the CSI sequence being read, at most 32 bytes
	utf    []byte // the bytes of a character not complete yet
}

type termState uint8

const (
	tGround    termState = iota
	tEsc                 // after ESC
	tEscInter            // ESC and intermediates, until a final byte
	tCSI                 // ESC [ … final
	tString              // OSC, DCS, SOS, PM, APC: until BEL or ST
	tStringEsc           // ESC inside a string: ST when a backslash follows
)

// termAct is what a byte read amounts to.
type termAct uint8

const (
	actNone    termAct = iota // part of something not complete yet, or dropped
	actControl                // the byte is a C0 control other than ESC (or DEL)
	actRune                   // a character is complete
	actCSI                    // the byte is a CSI sequence's final byte; params holds its parameters
	actEsc                    // the byte followed a lone ESC: a two-byte sequence
)

// step reads one byte: what it amounts to, and the character for actRune.
func (p *termReader) step(c byte) (termAct, rune) {
	switch p.st {
	case tGround:
		return p.ground(c)
	case tEsc:
		switch {
		case c == '[':
			p.st, p.params = tCSI, p.params[:0]
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			p.st = tString
		case c >= 0x20 && c <= 0x2f:
			p.st = tEscInter // ESC ( B and the like: one more byte
		default:
			p.st = tGround
			return actEsc, 0
		}
	case tEscInter:
		if c >= 0x30 && c <= 0x7e {
			p.st = tGround
		}
	case tCSI:
		switch {
		case c >= 0x40 && c <= 0x7e:
			p.st = tGround
			return actCSI, 0
		case c == 0x1b:
			p.st = tEsc
		case c < 0x20:
			return actControl, 0 // controls inside a sequence act as usual
		case len(p.params) < 32:
			p.params = append(p.params, c)
		}
	case tString:
		switch c {
		case 0x07:
			p.st = tGround
		case 0x1b:
			p.st = tStringEsc
		}
	case tStringEsc:
		if c == '\\' {
			p.st = tGround
		} else {
			p.st = tString
		}
	}
	return actNone, 0
}

func (p *termReader) ground(c byte) (termAct, rune) {
	switch {
	case c == 0x1b:
		p.st = tEsc
	case c < 0x20:
		return actControl, 0
	case c != 0x7f:
		p.utf = append(p.utf, c)
		if !utf8.FullRune(p.utf) && len(p.utf) < utf8.UTFMax {
			return actNone, 0
		}
		r, _ := utf8.DecodeRune(p.utf)
		p.utf = p.utf[:0]
		if r >= 0x80 && r <= 0x9f {
			p.c1(r)
			return actNone, 0
		}
		return actRune, r
	}
	return actNone, 0
}

// c1 acts on a C1 control: U+009B starts a CSI sequence as ESC [ does, U+009D an OSC string
// as ESC ] does. None of them is text.
func (p *termReader) c1(r rune) {
	switch r {
	case 0x9b:
		p.st, p.params = tCSI, p.params[:0]
	case 0x90, 0x98, 0x9d, 0x9e, 0x9f: // DCS, SOS, OSC, PM, APC
		p.st = tString
	}
}
