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
// arguments) and refuses such a submission with the way to write it.

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

// repeatedGres is the refusal for a component whose several --gres options include
// gpu:mem, of which the client would keep only the last; "" when there is none.
func repeatedGres(args []string, comp uint32) string {
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
	return "gpumem: you gave --gres " + strconv.Itoa(len(vals)) + " times (" + strings.Join(given, " ") +
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
