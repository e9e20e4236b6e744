package plugin

import (
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/refusal"
)

// MaxScriptRead is how much of a batch script gpumem reads: its first MiB. sbatch takes
// #SBATCH lines only from the script's head, up to its first command, so that head is all
// that matters; its length is the user's to choose, though, and job_submit holds
// slurmctld's locks. A gpu:mem job whose #SBATCH head runs past the bound is refused
// (ScriptRepeats says how to fix it); any other job is read only up to it. The shim's
// prefilter (gpumem_script_to_go, GPUMEM_SCRIPT_MAX) reads the same bytes.
const MaxScriptRead = 1 << 20

// ScriptRepeats is the refusal for a batch script whose #SBATCH (or old #SLURM) lines give
// --gres more than once in one heterogeneous component, one of them gpu:mem; and, for a
// job that asks for GPU memory (asksMem), for a script whose #SBATCH head gpumem cannot
// read to its end. "" when there is none. A --gres on sbatch's command line overrides
// the script's, but job_submit cannot tell it from the script's last (cli_filter may
// have translated it), so such a script is refused all the same.
func ScriptRepeats(script string, asksMem bool) string {
	return scriptRepeats(script, asksMem, MaxScriptRead)
}

// scriptRefusal is ScriptRepeats for the job's own script.
func (f Fields) scriptRefusal() string { return ScriptRepeats(f.Script, AsksMem(f)) }

// scriptRepeats is ScriptRepeats reading at most max bytes, in one pass over them.
func scriptRepeats(script string, asksMem bool, max int) string {
	head, long := script, false
	if len(head) > max {
		head, long = head[:max], true
	}
	var given gresGiven // the --gres of the component being read
	g := getopt{cl: sbatch}
	stopped := false // sbatch met a word that is no option: it refuses the script itself
	for n := 1; head != ""; n++ {
		var line string
		line, head, _ = strings.Cut(head, "\n")
		body, ok := strings.CutPrefix(line, "#SBATCH")
		if !ok {
			body, ok = strings.CutPrefix(line, "#SLURM")
		}
		if !ok {
			if t := skipSpace(line); t != "" && t[0] != '#' {
				long = false // the first command: sbatch reads no further
				break
			}
			continue
		}
		if hetSeparator(skipSpace(body)) {
			if r := given.inScript(); r != "" {
				return r
			}
			given, g, stopped = gresGiven{}, getopt{cl: sbatch}, false
			continue // sbatch reads nothing more of a hetjob line (get_argument)
		}
		for !stopped {
			var w string
			if w, body, ok = scriptWord(body); !ok {
				break
			}
			switch st, v := g.next(w); st {
			case stepGres:
				given.add(v, n)
			case stepEnd, stepDashes, stepBad:
				stopped = true
			}
		}
	}
	if r := given.inScript(); r != "" {
		return r
	}
	if long && asksMem {
		return refusal.ScriptHeadTooLong(sizeText(max))
	}
	return ""
}

// inScript is refusal for --gres given in a script's #SBATCH lines, which it names.
func (g *gresGiven) inScript() string {
	if g.n < 2 || !g.mem {
		return ""
	}
	at := make([]string, 0, len(g.lines))
	for i, n := range g.lines {
		if i == 0 || g.lines[i-1] != n {
			at = append(at, strconv.Itoa(n))
		}
	}
	return g.refusal(refusal.InScript(at, g.n > len(g.lines)))
}

// isSpace is C's isspace, as sbatch reads a script.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// skipSpace is s without the blanks it starts with.
func skipSpace(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

// hetSeparator says whether an #SBATCH line's words (blanks before them taken off) start
// with hetjob or packjob, which start the next component.
func hetSeparator(s string) bool {
	if s == "" || s[0]|0x20 != 'h' && s[0]|0x20 != 'p' {
		return false
	}
	for _, w := range [...]string{"hetjob", "packjob"} {
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) && (len(s) == len(w) || isSpace(s[len(w)])) {
			return true
		}
	}
	return false
}

// scriptWord is the first word of the rest of an #SBATCH line, as sbatch's get_argument
// reads it: blanks split words outside quotes, a backslash keeps the character after it,
// an unquoted "#" starts a comment, and a hetjob or packjob word, a word that starts
// with ":" or an unmatched quote ends the line (sbatch refuses the last two). ok is false
// when the line has no more words.
func scriptWord(s string) (w, rest string, ok bool) {
	s = skipSpace(s)
	if s == "" || s[0] == ':' || s[0] == '#' || hetSeparator(s) {
		return "", "", false
	}
	var b []byte // nil while the word is s[:i] as written
	var quote byte
	i := 0
loop:
	for ; i < len(s) && (quote != 0 || !isSpace(s[i])); i++ {
		c := s[i]
		switch {
		case c == '\\':
			b = wordSoFar(b, s, i)
			if i+1 < len(s) {
				b = append(b, s[i+1])
				i++
			}
			continue
		case quote != 0 && c == quote:
			quote = 0
			b = wordSoFar(b, s, i)
			continue
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
			b = wordSoFar(b, s, i)
			continue
		case quote == 0 && c == '#':
			rest = "" // a comment: the line ends
			s = s[:i]
			break loop
		}
		if b != nil {
			b = append(b, c)
		}
	}
	if quote != 0 {
		return "", "", false
	}
	if i < len(s) {
		rest = s[i:]
	}
	// sbatch ends the line at a word with nothing in it, such as ""
	if w = wordOf(b, s, i); w == "" {
		return "", "", false
	}
	return w, rest, true
}

// wordSoFar is the word being built, b, or, where it is still as written, s[:i] copied.
func wordSoFar(b []byte, s string, i int) []byte {
	if b == nil {
		b = append(make([]byte, 0, i+8), s[:i]...)
	}
	return b
}

func wordOf(b []byte, s string, i int) string {
	if b == nil {
		return s[:i]
	}
	return string(b)
}

// sizeText is n bytes in the largest binary unit that holds it whole.
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
