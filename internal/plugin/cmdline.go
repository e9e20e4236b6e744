package plugin

import (
	"os"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/request"
)

// srun, sbatch and salloc keep only the last of several --gres options, so in
// `--gres=gpu:mem:20g --gres=shard:3` gpumem would never see the gpu:mem at all. The
// client's own command line still has every one: cli_filter reads it (the process's
// arguments) and refuses such a submission with the way to write it. The #SBATCH lines of
// a batch script repeat --gres the same way; cli_filter is never given the script (its
// pre_submit gets the parsed options only, and a script on stdin is already read), so
// job_submit, which gets it whole, refuses those (ScriptRepeats).

// gresOptions returns the values of every --gres option of heterogeneous component comp
// (components are separated by a lone ":") in args, the client's arguments without the
// program name. Scanning stops at "--", after which everything is the user's program.
func gresOptions(args []string, comp uint32) []string {
	var out []string
	var at uint32
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return out
		case a == ":":
			at++
		case at != comp:
		case strings.HasPrefix(a, "--gres="):
			out = append(out, strings.TrimPrefix(a, "--gres="))
		case a == "--gres" && i+1 < len(args):
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// hetCommandLine says whether args (the client's, without the program name) give a
// heterogeneous job: a lone ":" between components, before any "--". cli_filter is told
// the component's offset, which is 0 both for the first component and for a job of its
// own; the command line tells them apart. A batch script's "#SBATCH hetjob" lines are
// not seen here (cli_filter never gets the script).
func hetCommandLine(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case ":":
			return true
		}
	}
	return false
}

// repeatedGres is the refusal for a component whose several --gres options include
// gpu:mem, of which the client would keep only the last; "" when there is none. where
// says where the options were given, "" for the command line.
func repeatedGres(args []string, comp uint32, where string) string {
	vals := gresOptions(args, comp)
	if len(vals) < 2 {
		return ""
	}
	mem := false
	for _, v := range vals {
		mem = mem || request.HasMem(v)
	}
	if !mem {
		return ""
	}
	given := make([]string, len(vals))
	for i, v := range vals {
		given[i] = "--gres=" + v
	}
	return "gpumem: you gave --gres " + strconv.Itoa(len(vals)) + " times" + where + " (" + strings.Join(given, " ") +
		"), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=" + strings.Join(vals, ",")
}

// clientArgs is the client's command line without its name.
func clientArgs() []string {
	if len(os.Args) > 1 {
		return os.Args[1:]
	}
	b, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		return nil
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) < 2 {
		return nil
	}
	return args[1:]
}

// ScriptRepeats is repeatedGres for the #SBATCH lines of a batch script, every component;
// job_submit refuses what it returns.
func ScriptRepeats(script string) string {
	// The shim's prefilter (gpumem_gres_twice) passes on only scripts that spell --gres
	// twice; an option name built of quotes (--g"res") is not followed, here or there.
	if strings.Count(script, "--gres") < 2 {
		return ""
	}
	args, comps := scriptArgs(script)
	for c := uint32(0); c < comps; c++ {
		if r := repeatedGres(args, c, " in the script's #SBATCH lines"); r != "" {
			return r
		}
	}
	return ""
}

// scriptArgs is the options of a batch script's #SBATCH (and old #SLURM) lines as sbatch
// reads them: from the lines that start with the word, up to the first line that is
// neither blank nor a comment, split at blanks outside quotes, with a lone ":" between
// heterogeneous components (a "hetjob" or "packjob" line), and how many components there are.
func scriptArgs(script string) (args []string, comps uint32) {
	comps = 1
	for len(script) > 0 {
		line, rest, _ := strings.Cut(script, "\n")
		script = rest
		var body string
		if b, ok := strings.CutPrefix(line, "#SBATCH"); ok {
			body = b
		} else if b, ok := strings.CutPrefix(line, "#SLURM"); ok {
			body = b
		} else if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		} else {
			break // the first command ends the options
		}
		words := splitWords(body)
		if len(words) > 0 && (strings.EqualFold(words[0], "hetjob") || strings.EqualFold(words[0], "packjob")) {
			args = append(args, ":")
			comps++
			words = words[1:]
		}
		args = append(args, words...)
	}
	return args, comps
}

// splitWords splits an #SBATCH line at blanks, as sbatch does: quotes group, a backslash
// keeps the next character.
func splitWords(s string) []string {
	var out []string
	var w strings.Builder
	in, quote, escaped := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			w.WriteByte(c)
			escaped = false
		case c == '\\':
			escaped, in = true, true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\r':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}
