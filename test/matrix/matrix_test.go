package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

// The option lists each release's man pages give (options/RELEASE/COMMAND, written by
// run.sh from the lab's man pages): every option is in the matrix or says why not.
func TestEveryManPageOptionClassified(t *testing.T) {
	lists, err := filepath.Glob("options/*/*")
	if err != nil {
		t.Fatal(err)
	}
	// Per release of the release table, salloc, sbatch and srun: every release CI runs,
	// and those run by hand that have been (25.11 from source).
	per := map[string]int{}
	for _, p := range lists {
		rel := filepath.Base(filepath.Dir(p))
		if _, err := slurmrel.Table().Lookup(rel); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		per[rel]++
	}
	for _, r := range slurmrel.Table().Rows {
		if r.CI && per[r.Name] == 0 {
			t.Errorf("no option lists of %s, a release CI runs (test/matrix/run.sh %s)", r.Name, r.Name)
		}
	}
	for rel, n := range per {
		if n != 3 {
			t.Errorf("options/%s: %d lists; want salloc, sbatch and srun", rel, n)
		}
	}
	for _, p := range lists {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		names := strings.Fields(string(b))
		if len(names) < 80 {
			t.Errorf("%s: %d options; a man page lists more", p, len(names))
		}
		if u := Unclassified(names); len(u) > 0 {
			t.Errorf("%s: options neither in the matrix nor said why not: %v", p, u)
		}
	}
}

func TestManOptions(t *testing.T) {
	roff := ".TP\n\\fB\\-N\\fR, \\fB\\-\\-nodes\\fR=<\\fIn\\fR>\nText \\fB\\-\\-not\\-this\\fR.\n.TP\n\\fB\\-\\-x11\\fR\n.TP 12\n\\fB\\-\\-mem\\-per\\-gpu\\fR=<x>\n"
	got := strings.Join(ManOptions(roff), " ")
	if got != "--mem-per-gpu --nodes --x11" {
		t.Errorf("got %q", got)
	}
}

func TestCellsAndSample(t *testing.T) {
	cells := Cells(map[string][]string{"sbatch": {"--exclusive", "--job-name", "--array"}, "srun": {"--ntasks"}})
	if want := (2 + 1 + 1) * len(Sizes) * len(Partitions); len(cells) != want {
		t.Fatalf("%d cells, want %d", len(cells), want)
	}
	c := cells[0]
	if got := strings.Join(c.Argv("m0"), " "); got != "sbatch --job-name=m0 --wait --output=/dev/null --array=0-1 --gres=gpu:mem:4g true" &&
		got != "sbatch --job-name=m0 --wait --output=/dev/null --array=0-1 --gres=gpu:mem:4g --wrap true" {
		t.Errorf("argv %q", got)
	}
	a, b := Sample(cells, 5, 7), Sample(cells, 5, 7)
	if len(a) != 5 || a[0].Key() != b[0].Key() || a[4].Key() != b[4].Key() {
		t.Errorf("a seed draws the same sample: %v %v", a, b)
	}
}

func TestJudge(t *testing.T) {
	cases := []struct {
		code    int
		stderr  string
		timeout bool
		want    Outcome
	}{
		{0, "", false, Ran},
		{0, "srun: job 4 queued and waiting for resources\n", true, Failed},
		{1, "sbatch: error: gpumem: you asked for --gres=gpu:mem:60g, but ...\nsbatch: error: cli_filter plugin terminated with error\n", false, Refused},
		{1, "srun: error: --gpus-per-socket=1 cannot be combined with --gres=gpu:mem: gpumem does not place GPUs by socket\n", false, Refused},
		{1, "sbatch: error: gpumem: no\nsbatch: error: Batch job submission failed: Invalid generic resource (gres) specification\n", false, Refused},
		{1, "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification\n", false, Failed},
		{1, "srun: error: gpumem: --gpus-per-task \"gres:gpu:1\" cannot be combined with gpu:mem\n", false, Failed},
		{1, "srun: error: Unable to allocate resources: Requested node configuration is not available\n", false, Failed},
		{1, "srun: job 7 queued and waiting for resources\nsrun: error: gpu:mem died\n", false, Failed},
		{2, "sbatch: error: something else\n", false, Failed},
	}
	for _, c := range cases {
		if got := Judge(c.code, c.stderr, c.timeout); got.Outcome != c.want {
			t.Errorf("Judge(%d, %q, %v) = %+v, want %s", c.code, c.stderr, c.timeout, got, c.want)
		}
	}
}
