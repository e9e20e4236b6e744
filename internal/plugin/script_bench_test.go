package plugin

import (
	"strconv"
	"strings"
	"testing"
)

// costSizes are the input sizes the cost benchmarks step through, 10x apart, so that
// test/bench/cost-slope.sh can print each step's ratio: about 10 where the cost is linear.
var costSizes = []int{1000, 10000, 100000, 1000000}

// scriptShapes builds scripts of n lines (a line of n words for "giant-line"), the
// shapes a hostile user would try, each read to its end and none refused but "gres".
var scriptShapes = []struct {
	name string
	mem  bool // the job's fields ask for GPU memory
	make func(n int) string
}{
	{"plain", false, func(n int) string { return strings.Repeat("#SBATCH -n1 -p gpu\n", n) + "true\n" }},
	{"gpumem", true, func(n int) string {
		return "#SBATCH --gres=gpu:mem:5g\n" + strings.Repeat("#SBATCH -n1 -p gpu\n", n) + "true\n"
	}},
	// the audit's shape: a component per line, --gres in the first and the last
	{"hetjob", false, func(n int) string {
		return "#SBATCH --gres=gpu:mem:5g\n" + strings.Repeat("#SBATCH hetjob\n", n) + "#SBATCH --gres=shard:1\n"
	}},
	{"gres", false, func(n int) string { return strings.Repeat("#SBATCH --gres=gpu:mem:5g\n", n) }},
	{"giant-line", true, func(n int) string { return "#SBATCH" + strings.Repeat(" --gres=gpu:mem:5g -n1", n/2) + "\n" }},
	{"quotes", true, func(n int) string { return strings.Repeat("#SBATCH -J \"a b\"'c'\\\"d --comment='#' # \"\n", n) }},
	{"comments", true, func(n int) string { return strings.Repeat("# --gres=shard:1 \"'\n", n) + "#SBATCH --gres=gpu:mem:5g\n" }},
}

// BenchmarkScriptCost is job_submit's read of a batch script against the script's size,
// without the bound (the slope), and with it (ScriptRepeats: flat past MaxScriptRead).
func BenchmarkScriptCost(b *testing.B) {
	for _, sh := range scriptShapes {
		for _, bounded := range []bool{false, true} {
			for _, n := range costSizes {
				script := sh.make(n)
				max := len(script)
				name := "whole/"
				if bounded {
					max, name = MaxScriptRead, "bounded/"
				}
				b.Run(name+sh.name+"/lines="+strconv.Itoa(n), func(b *testing.B) {
					b.SetBytes(int64(min(len(script), max))) // what is read
					for i := 0; i < b.N; i++ {
						scriptRepeats(script, sh.mem, max)
					}
				})
			}
		}
	}
}

// BenchmarkCommandLineCost is cli_filter's read of the client's command line against its
// number of words: srun with a component per ":", many --gres, options whose arguments
// are words of their own, a program with many arguments.
func BenchmarkCommandLineCost(b *testing.B) {
	shapes := []struct {
		name string
		word func(i int) []string
	}{
		{"components", func(int) []string { return []string{"--gres=gpu:mem:5g", "app", ":"} }},
		{"gres", func(int) []string { return []string{"--gres", "gpu:mem:5g"} }},
		{"options", func(int) []string { return []string{"-N", "2", "--ntasks-per-n", "1", "-vlN2"} }},
		{"program", func(i int) []string {
			if i == 0 {
				return []string{"--gres=gpu:mem:5g", "app"}
			}
			return []string{"--gres=x"}
		}},
	}
	for _, sh := range shapes {
		for _, n := range costSizes {
			var args []string
			for i := 0; len(args) < n; i++ {
				args = append(args, sh.word(i)...)
			}
			b.Run(sh.name+"/words="+strconv.Itoa(n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					given, _ := commandLine(srun, args, 1)
					given.refusal("")
				}
			})
		}
	}
}
