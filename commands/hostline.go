package commands

import "strings"

// hostLine is a line for people that host printed (escaped already) as this machine shows it:
// the first of names, the agents it was asked about, qualified as HOST:NAME, a name the user
// can paste back ("stopped box1:s3 (killed by SIGTERM)", "allowed box1:fix Bash (req-1)");
// qualified reports that one was there. A name counts where it stands as a word: after the
// line's start, a space or "(", before its end, a space or one of ":,;)". A pattern (fix-*)
// names no agent.
//
// Only the line's first two words are looked at: agt names the agent there ("stopped s3",
// "s3 failed", "name  s3"). Further on are the agent's own words (inspect's argv, a reason),
// which are shown as they are, never rewritten ("argv  claude -p fix" stays).
func hostLine(line, host string, names []string) (text string, qualified bool) {
	at := -1
	head := line[:headEnd(line)]
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "*?[") {
			continue
		}
		if i := wordIndex(head, n); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return line, false
	}
	return line[:at] + host + ":" + line[at:], true
}

// wordIndex is the index of the first occurrence of word in s that stands as a word.
func wordIndex(s, word string) int {
	for from := 0; from <= len(s)-len(word); {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(word)
		if (i == 0 || strings.IndexByte(" (", s[i-1]) >= 0) && (end == len(s) || strings.IndexByte(" :,;)", s[end]) >= 0) {
			return i
		}
		from = i + 1
	}
	return -1
}

// headEnd is where the line's first two words (separated by spaces) end.
func headEnd(line string) int {
	i := 0
	for w := 0; w < 2; w++ {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		for i < len(line) && line[i] != ' ' {
			i++
		}
	}
	return i
}
