package plugin

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/refusal"
	"github.com/gpumem/gpumem/internal/request"
)

// srun, sbatch and salloc keep only the last of several --gres options (slurm_opt.c's
// arg_set_gres replaces the one before, on 22.05, 24.11 and 26.05), so in
// `--gres=gpu:mem:20g --gres=shard:3` gpumem would never see the gpu:mem at all. The
// client's own command line still has every one: cli_filter reads it (the process's
// arguments) and refuses such a submission with the way to write it. The #SBATCH lines of
// a batch script repeat --gres the same way; cli_filter is never given the script (its
// pre_submit gets the parsed options only, and a script on stdin is already read), so
// job_submit, which gets it whole, refuses those (ScriptRepeats).
//
// Both are read as the client reads them, with getopt_long in "+" mode: options and
// their arguments up to the first word that is not an option, or "--". A lone ":" there
// starts the next heterogeneous component. What follows is not the job's: sbatch's
// script and its arguments, salloc's command, srun's program and its arguments (srun
// alone starts another component at a lone ":" after a program).

// step is what getopt made of one word.
type step int

const (
	stepOption step = iota // an option, or its argument
	stepGres               // --gres, whose value came with it
	stepEnd                // not an option: the options end before this word
	stepDashes             // "--": the options end after it
	stepBad                // the client stops here with an error of its own
)

// getopt reads one component's options a word at a time, as getopt_long does.
type getopt struct {
	cl client
	// pending: the next word is the argument of the option before it (gres: of --gres).
	pending, gres bool
}

// next reads word w; with stepGres, val is the --gres value.
func (g *getopt) next(w string) (st step, val string) {
	if g.pending {
		g.pending = false
		if g.gres {
			return stepGres, w
		}
		return stepOption, ""
	}
	switch {
	case w == "--":
		return stepDashes, ""
	case strings.HasPrefix(w, "--"):
		name, v, eq := strings.Cut(w[2:], "=")
		arg := longArg(g.cl, name)
		switch {
		case arg == '-':
			return stepBad, ""
		case name == "gres" && eq:
			return stepGres, v
		case arg == 'r' && !eq:
			g.pending, g.gres = true, name == "gres"
		}
		return stepOption, ""
	case len(w) > 1 && w[0] == '-':
		for j := 1; j < len(w); j++ {
			switch shortArg(g.cl, w[j]) {
			case '-':
				return stepBad, ""
			case 'r':
				g.pending, g.gres = j+1 == len(w), false
				return stepOption, ""
			case 'o':
				return stepOption, "" // the rest of the word, if any, is its argument
			}
		}
		return stepOption, ""
	}
	return stepEnd, "" // a name, "-", ":" or ""
}

// longArg is how client cl takes --name's argument ('r', 'n'), or '-' where no option
// of cl is called so. An abbreviation stands for the one option it starts; one that
// starts several is an error in getopt_long (the aliases that share a meaning share no
// prefix that no other option has).
func longArg(cl client, name string) byte {
	i := sort.Search(len(longOptions), func(i int) bool { return longOptions[i].name >= name })
	if i < len(longOptions) && longOptions[i].name == name {
		return longOptions[i].arg[cl]
	}
	arg := byte('-')
	for ; name != "" && i < len(longOptions) && strings.HasPrefix(longOptions[i].name, name); i++ {
		if a := longOptions[i].arg[cl]; a != '-' {
			if arg != '-' {
				return '-' // ambiguous
			}
			arg = a
		}
	}
	return arg
}

// shortArg is how client cl takes -c's argument: 'r' required, 'o' only attached,
// 'n' none, '-' no such option.
func shortArg(cl client, c byte) byte {
	s := shortOptions[cl]
	i := strings.IndexByte(s, c)
	switch {
	case c == ':' || i < 0:
		return '-'
	case strings.HasPrefix(s[i+1:], "::"):
		return 'o'
	case strings.HasPrefix(s[i+1:], ":"):
		return 'r'
	}
	return 'n'
}

// commandLine is the --gres options that client cl's arguments args (without the
// program name) give heterogeneous component comp (0 also for a job of its own), and
// how many components the command line has, in one pass.
func commandLine(cl client, args []string, comp uint32) (given gresGiven, comps uint32) {
	comps = 1
	g := getopt{cl: cl}
	next := func() { comps, g = comps+1, getopt{cl: cl} }
	ended, program := false, false
	for _, w := range args {
		switch {
		case program: // srun's program and its arguments run to a lone ":"
			if w == ":" {
				next()
				program = false
			}
			continue
		case ended: // after "--" the client looks at one word for ":"
			ended = false
			if w == ":" {
				next()
				continue
			}
			if cl != srun {
				return given, comps
			}
			program = true
			continue
		}
		st, v := g.next(w)
		switch st {
		case stepGres:
			if comps-1 == comp {
				given.add(v, 0)
			}
		case stepDashes:
			ended = true
		case stepEnd:
			if w == ":" {
				next()
			} else if cl != srun {
				return given, comps
			} else {
				program = true
			}
		case stepBad:
			return given, comps
		}
	}
	return given, comps
}

// gresGiven is what a user gave as --gres in one component: how many times, the first
// maxNamed values and their lines (of a script), and whether any was gpu:mem. It keeps
// no more than that whatever the job carries.
type gresGiven struct {
	n     int
	vals  []string
	lines []int
	mem   bool
}

func (g *gresGiven) add(v string, line int) {
	g.n++
	g.mem = g.mem || request.HasMem(v)
	if len(g.vals) < maxNamed {
		g.vals, g.lines = append(g.vals, v), append(g.lines, line)
	}
}

// refusal is the refusal for --gres given where (" in ...", or "" for the command
// line) when it was given several times, one of them gpu:mem, of which the client would
// keep only the last; "" otherwise.
func (g *gresGiven) refusal(where string) string {
	if g.n < 2 || !g.mem {
		return ""
	}
	return refusal.GresRepeated(g.n, where, g.vals, g.n-len(g.vals))
}

// maxNamed is how many of the options a user repeated a refusal names: enough to
// recognise their own lines, and a text of bounded length whatever the job carries.
const maxNamed = 8

// clientCommandLine is the client that runs cli_filter, by its name, and its command
// line without the name. The kernel bounds a command line (ARG_MAX), and it is the user's
// own process that reads it.
func clientCommandLine() (client, []string) {
	args := os.Args
	if len(args) < 2 {
		b, err := os.ReadFile("/proc/self/cmdline")
		if err != nil {
			return srun, nil
		}
		args = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	if len(args) < 1 {
		return srun, nil
	}
	return clientNamed(args[0]), args[1:]
}

// clientNamed is the client a program path names; srun, whose options are the most,
// for any other name.
func clientNamed(path string) client {
	switch filepath.Base(path) {
	case "sbatch":
		return sbatch
	case "salloc":
		return salloc
	}
	return srun
}
