package plugin

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestRepeatedGres(t *testing.T) {
	for _, c := range []struct {
		args []string
		comp uint32
		want string
	}{
		{[]string{"--gres=gpu:mem:20g", "--gres=shard:3", "true"}, 0,
			"gpumem: you gave --gres 2 times (--gres=gpu:mem:20g --gres=shard:3), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:20g,shard:3"},
		{[]string{"-p", "gpu", "--gres", "nic:1", "--gres=gpu:mem:20g", "true"}, 0,
			"gpumem: you gave --gres 2 times (--gres=nic:1 --gres=gpu:mem:20g), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=nic:1,gpu:mem:20g"},
		{[]string{"--gres=gpu:mem:20g", "true"}, 0, ""},
		{[]string{"--gres=shard:3", "--gres=gpu:2", "true"}, 0, ""}, // not gpumem's
		// Each hetjob component has its own options.
		{[]string{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:6g", "true"}, 1, ""},
		{[]string{"--gres=gpu:mem:5g", ":", "--gres=gpu:mem:6g", "--gres=shard:1", "true"}, 1,
			"gpumem: you gave --gres 2 times (--gres=gpu:mem:6g --gres=shard:1), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=gpu:mem:6g,shard:1"},
		// After --, the arguments are the user's program's.
		{[]string{"--gres=gpu:mem:5g", "--", "prog", "--gres=x"}, 0, ""},
		{[]string{"--gres=gpu:mem:5g"}, 3, ""}, // no such component
	} {
		given, _ := commandLine(srun, c.args, c.comp)
		if got := given.refusal(""); got != c.want {
			t.Errorf("%v (component %d):\n got %q\nwant %q", c.args, c.comp, got, c.want)
		}
	}
}

// The command line is the client's as getopt_long ("+") reads it: options and their
// arguments up to the program, whose words (and a batch script's arguments, and the
// command of --wrap) are never the job's.
func TestCommandLineStopsAtTheProgram(t *testing.T) {
	for _, c := range []struct {
		cl   client
		args string
		want [][]string
	}{
		// salloc runs srun, whose options are its own
		{salloc, "-N2 --gres=gpu:mem:10g srun -N1 --gres=gpu:mem:5g app", [][]string{{"gpu:mem:10g"}}},
		{sbatch, "--gres=gpu:mem:5g job.sh --gres=x", [][]string{{"gpu:mem:5g"}}},
		{srun, "--gres=gpu:mem:5g app --gres=x", [][]string{{"gpu:mem:5g"}}},
		{sbatch, "--gres=gpu:mem:5g --wrap --gres=shard:1", [][]string{{"gpu:mem:5g"}}},
		{sbatch, "--gres=gpu:mem:5g --wrap=--gres=shard:1", [][]string{{"gpu:mem:5g"}}},
		// an option's argument in the next word, attached, or after =
		{srun, "-N 2 --gres gpu:mem:5g app --gres=x", [][]string{{"gpu:mem:5g"}}},
		{srun, "--nodes 2 -N2 -vN 2 -lN2 --gres=gpu:mem:5g app -N 2 --gres=y", [][]string{{"gpu:mem:5g"}}},
		{srun, "--ntasks-per-n 2 --gres=gpu:mem:5g app", [][]string{{"gpu:mem:5g"}}}, // --ntasks-per-node
		{srun, "--nod 2 --gres=gpu:mem:5g app", [][]string{nil}},                     // --nodes, --nodelist or --nodefile
		{sbatch, "-J --gres=shard:1 --gres=gpu:mem:5g job.sh", [][]string{{"gpu:mem:5g"}}},
		// -W takes an argument in srun, none in sbatch
		{srun, "-W --gres=shard:1 --gres=gpu:mem:5g app", [][]string{{"gpu:mem:5g"}}},
		{sbatch, "-W --gres=shard:1 --gres=gpu:mem:5g job.sh", [][]string{{"shard:1", "gpu:mem:5g"}}},
		// optional arguments are only ever attached
		{srun, "-k --gres=gpu:mem:5g -I5 --exclusive --gres=shard:1 app", [][]string{{"gpu:mem:5g", "shard:1"}}},
		// "--" ends the options; the program follows
		{srun, "--gres=gpu:mem:5g -- --gres=x", [][]string{{"gpu:mem:5g"}}},
		{sbatch, "--gres=gpu:mem:5g -- job.sh --gres=x", [][]string{{"gpu:mem:5g"}}},
		// components: a lone ":" where an option could be; srun's programs end at one too
		{sbatch, "--gres=gpu:mem:5g : --gres=gpu:mem:6g job.sh : --gres=x", [][]string{{"gpu:mem:5g"}, {"gpu:mem:6g"}}},
		{salloc, "--gres=gpu:mem:5g : -n1 bash -c : --gres=x", [][]string{{"gpu:mem:5g"}, nil}},
		{srun, "--gres=gpu:mem:5g app --gres=x : --gres=gpu:mem:6g --gres=shard:1 app2 --gres=y", [][]string{{"gpu:mem:5g"}, {"gpu:mem:6g", "shard:1"}}},
		{srun, "-n1 -- : --gres=gpu:mem:6g app", [][]string{nil, {"gpu:mem:6g"}}},
		// a word the client would refuse ends what it reads
		{srun, "--gres=gpu:mem:5g --no-such-option --gres=shard:1 app", [][]string{{"gpu:mem:5g"}}},
		{srun, "--gres=gpu:mem:5g --gre=shard:1 app", [][]string{{"gpu:mem:5g"}}}, // --gres or --gres-flags
		{srun, "", [][]string{nil}},
	} {
		var got [][]string
		for comp := uint32(0); comp < uint32(len(c.want)); comp++ {
			given, comps := commandLine(c.cl, strings.Fields(c.args), comp)
			if comps != uint32(len(c.want)) {
				t.Errorf("%s %s: %d components, want %d", [...]string{"salloc", "sbatch", "srun"}[c.cl], c.args, comps, len(c.want))
			}
			got = append(got, given.vals)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", [...]string{"salloc", "sbatch", "srun"}[c.cl], c.args, got, c.want)
		}
	}
}

// cli_filter's first component has offset 0, as a job of its own does: the command line's
// lone ":" says it is the first of a heterogeneous job.
func TestHetCommandLine(t *testing.T) {
	for _, c := range []struct {
		cl   client
		args string
		want bool
	}{
		{sbatch, "--gres=gpu:mem:4g -p train,inference : --gres=gpu:mem:4g job.sh", true},
		{salloc, "--gres=gpu:mem:4g : -n1 true", true},
		{sbatch, "--gres=gpu:mem:4g --wrap true", false},
		{sbatch, "--gres=gpu:mem:4g -- job.sh :", false}, // the script's own argument
		{salloc, "--gres=gpu:mem:4g bash -c :", false},
		{srun, "--gres=gpu:mem:4g prog : prog2", true}, // srun runs one program per component
		{srun, "-J : prog", false},                     // the job's name
		{srun, "", false},
	} {
		if _, comps := commandLine(c.cl, strings.Fields(c.args), 0); (comps > 1) != c.want {
			t.Errorf("%q: %d components, want a hetjob: %v", c.args, comps, c.want)
		}
	}
}

func TestClientNamed(t *testing.T) {
	for path, want := range map[string]client{"/usr/bin/sbatch": sbatch, "salloc": salloc, "/opt/slurm/bin/srun": srun, "python3": srun} {
		if got := clientNamed(path); got != want {
			t.Errorf("clientNamed(%q) = %d, want %d", path, got, want)
		}
	}
}

// An abbreviation is found by search: the table must stay sorted, one entry a name.
func TestLongOptionsTable(t *testing.T) {
	if !sort.SliceIsSorted(longOptions, func(i, j int) bool { return longOptions[i].name < longOptions[j].name }) {
		t.Fatal("longOptions is not sorted by name")
	}
	for i, o := range longOptions {
		if i > 0 && longOptions[i-1].name == o.name {
			t.Errorf("%s twice", o.name)
		}
		if len(o.arg) != 3 || strings.Trim(o.arg, "rn-") != "" {
			t.Errorf("%s: arg %q, want three of r, n, -", o.name, o.arg)
		}
	}
	for _, c := range []struct {
		cl   client
		name string
		want byte
	}{{srun, "gres", 'r'}, {sbatch, "wrap", 'r'}, {srun, "wrap", '-'}, {salloc, "exclusive", 'n'}, {srun, "cpu-b", 'r'}, {srun, "gre", '-'}, {srun, "", '-'}} {
		if got := longArg(c.cl, c.name); got != c.want {
			t.Errorf("longArg(%d, %q) = %c, want %c", c.cl, c.name, got, c.want)
		}
	}
}
