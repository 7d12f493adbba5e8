package commands

// termSafe makes text an agent controls safe to print on a terminal (R35): every C0 control
// but newline and tab, DEL, every C1 control and every byte that is not UTF-8 is shown escaped
// (\x1b, \u009b, \xff: escapeText), so that no escape sequence reaches the terminal to be
// interpreted. Clean text, the usual case, comes back as it is, without a copy.
//
// It stands in for the one function of the trust work that all printing commands will share;
// it has the same shape (a string in, a string to print out) so that swapping it is one line.
func termSafe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			return escapeText(s)
		}
	}
	return s
}

// safeLine is termSafe on one line cut to n runes: for columns that hold an agent's words.
func safeLine(s string, n int) string { return oneLine(termSafe(s), n) }
