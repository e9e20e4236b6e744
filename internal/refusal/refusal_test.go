package refusal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestNoFieldNames: no text here names one of Slurm's job_desc fields or gpumem's
// own Go names; users read only the options they type.
func TestNoFieldNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "refusal.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(x ast.Node) bool {
		lit, ok := x.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, bad := range []string{"tres_per_", "TresPer", "PerNode", "job_desc", "gres/gpu", "gres:gpu"} {
			if strings.Contains(s, bad) {
				t.Errorf("%q names %s", s, bad)
			}
		}
		return true
	})
	if n < 50 {
		t.Fatalf("%d strings read; the check would see nothing", n)
	}
}

func TestWords(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Asked("20g", 4, 2, true, "h100", "--gpus-per-task --exclusive", Shape(2, []string{"n1"}, []string{"n3"}, "a|b")),
			"--gres=gpu:mem:20g --gpus-per-task=h100:2 for 2 tasks --nodes=2 --nodelist=n1 --exclude=n3 --constraint=a|b --exclusive"},
		{Asked("20g", 2, 0, true, "", "", ""), "--gres=gpu:mem:20g --gpus=2"},
		{Asked("20g", 1, 0, false, "l4", "", ""), "--gres=gpu:mem:20g --gpus-per-node=l4:1"},
		{NoFit("--gres=gpu:mem:1t", nil, nil), "gpumem: you asked for --gres=gpu:mem:1t, but gpumem knows no partition with GPUs"},
		{NoFit("X", []string{"a", "b"}, []string{"p", "q"}), "gpumem: you asked for X, but a; b. It fits in partition p, q (--partition=p)"},
		{Count(1, false, "", 1), "on the nodes the job may use"},
		{GresRepeated(10, "", []string{"a", "b"}, 8), "gpumem: you gave --gres 10 times (--gres=a --gres=b ... 8 more), and Slurm keeps only the last, which would drop the others; write them as one option: --gres=a,b ... 8 more"},
		{InScript([]string{"2", "3", "5"}, true), " in the script's #SBATCH lines 2, 3 and 5 and more"},
	} {
		if c.got != c.want {
			t.Errorf("got  %q\nwant %q", c.got, c.want)
		}
	}
}
