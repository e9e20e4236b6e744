//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpumem/gpumem/test/matrix"
)

// The generated matrix (test/matrix): gpu:mem sizes beside every option of srun, sbatch
// and salloc that touches resources, on each partition. Each cell must run, or be
// refused at submit by gpumem with a reason. A seeded sample runs in every e2e pass;
// MATRIX=full runs every cell and writes the outcome table (test/matrix/run.sh).

// matrixOptions reads this release's man pages (the lab's own, else the lists kept in
// test/matrix/options) and checks that every option in them is classified.
func matrixOptions(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, cmd := range matrix.Commands {
		var names []string
		if roff := manPage(hostPath("/usr/share/man/man1/" + cmd + ".1.gz")); roff != "" {
			names = matrix.ManOptions(roff)
		} else {
			b, err := os.ReadFile(filepath.Join("..", "matrix", "options", release, cmd))
			if err != nil {
				t.Fatalf("no man page for %s in the lab and no list kept: %v", cmd, err)
			}
			names = strings.Fields(string(b))
		}
		if u := matrix.Unclassified(names); len(u) > 0 {
			t.Errorf("%s %s: options the matrix neither covers nor says why not: %v", release, cmd, u)
		}
		out[cmd] = names
	}
	return out
}

// manPage is a gzipped man page's roff source, or "" when there is none.
func manPage(path string) string {
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	b, err := exec.Command("zcat", path).Output()
	if err != nil {
		return ""
	}
	return string(b)
}

// matrixSeed is MATRIX_SEED, else new each run.
func matrixSeed(t *testing.T) int64 {
	if s := os.Getenv("MATRIX_SEED"); s != "" {
		return atoi(t, s)
	}
	return time.Now().UnixNano()
}

// runCell runs one cell with a time limit, and cancels whatever job it left behind.
func runCell(t *testing.T, c matrix.Cell, name string, limit time.Duration) matrix.Result {
	args := c.Argv(name)
	if root != "" {
		args = append([]string{"chroot", root}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &errOut
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return matrix.Result{Outcome: matrix.Failed, Detail: err.Error()}
	}
	res := matrix.Judge(code, errOut.String(), ctx.Err() != nil)
	if ctx.Err() != nil {
		if q := strings.TrimSpace(slurm(t, 30*time.Second, "", "squeue", "-h", "-n", name, "-o", "%T %r").out); q != "" {
			res.Detail += " (" + q + ")"
		}
	}
	slurm(t, 30*time.Second, "", "scancel", "--quiet", "-n", name)
	return res
}

// runCells runs cells, par at once, and returns their results in order.
func runCells(t *testing.T, cells []matrix.Cell, par int, limit time.Duration) []matrix.Result {
	out := make([]matrix.Result, len(cells))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = runCell(t, cells[i], "gpumem-matrix-"+strconv.Itoa(i), limit)
			}
		}()
	}
	for i := range cells {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// withReservation runs f with the reservation the matrix's --reservation cells name (n3,
// for root) in place. Jobs outside it may not use n3 meanwhile, so only those cells run
// then.
func withReservation(t *testing.T, f func()) {
	drop := func() { slurm(t, 30*time.Second, "", "scontrol", "delete", "reservationname="+matrix.Reservation) }
	drop()
	ok(t, "scontrol", "create", "reservation", "reservationname="+matrix.Reservation, "users=root",
		"nodes=n3", "starttime=now", "duration=120", "flags=ignore_jobs")
	defer drop()
	f()
}

// outcomeTable reads test/matrix/outcomes-RELEASE.tsv: cell key to outcome.
func outcomeTable() map[string]matrix.Outcome {
	b, err := os.ReadFile(filepath.Join("..", "matrix", "outcomes-"+release+".tsv"))
	if err != nil {
		return nil
	}
	m := map[string]matrix.Outcome{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, "\t"); len(f) >= 2 && !strings.HasPrefix(l, "#") {
			m[f[1]] = matrix.Outcome(f[0])
		}
	}
	return m
}

// TestMatrix runs a seeded sample of the matrix (MATRIX_SAMPLE cells, 10 by default), or
// with MATRIX=full every cell, writing the outcome table. A cell that fails, or whose
// outcome differs from the table's, fails the test.
func TestMatrix(t *testing.T) {
	clean(t)
	options := matrixOptions(t)
	all := matrix.Cells(options)
	full := os.Getenv("MATRIX") == "full"
	if full {
		for cmd, names := range options {
			dir := filepath.Join("..", "matrix", "options", release)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, cmd), []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cells, par, limit := all, 8, 120*time.Second
	if !full {
		n := 10
		if s := os.Getenv("MATRIX_SAMPLE"); s != "" {
			n = int(atoi(t, s))
		}
		seed := matrixSeed(t)
		t.Logf("matrix sample: %d of %d cells, seed %d (MATRIX_SEED=%d reruns it)", n, len(all), seed, seed)
		cells, par, limit = matrix.Sample(all, n, seed), 5, 90*time.Second
	}
	start := time.Now()
	var plain, resv []int
	for i, c := range cells {
		if c.Option == "--reservation" {
			resv = append(resv, i)
		} else {
			plain = append(plain, i)
		}
	}
	res := make([]matrix.Result, len(cells))
	run := func(idx []int) {
		sub := make([]matrix.Cell, len(idx))
		for k, i := range idx {
			sub[k] = cells[i]
		}
		for k, r := range runCells(t, sub, par, limit) {
			res[idx[k]] = r
		}
	}
	run(plain)
	if len(resv) > 0 {
		withReservation(t, func() { run(resv) })
	}
	table := outcomeTable()
	counts := map[matrix.Outcome]int{}
	var lines []string
	for i, c := range cells {
		r := res[i]
		counts[r.Outcome]++
		lines = append(lines, string(r.Outcome)+"\t"+c.Key()+"\t"+r.Detail)
		switch want, known := table[c.Key()]; {
		case r.Outcome == matrix.Failed:
			t.Errorf("%s: %s", c.Key(), r.Detail)
		case known && !full && want != r.Outcome:
			t.Errorf("%s: %s (%s), the outcome table says %s", c.Key(), r.Outcome, r.Detail, want)
		}
	}
	summary := fmt.Sprintf("%s: %d cells, %d ran, %d refused by gpumem, %d failed, in %v", release, len(cells),
		counts[matrix.Ran], counts[matrix.Refused], counts[matrix.Failed], time.Since(start).Round(time.Second))
	t.Log(summary)
	if full {
		sort.Strings(lines)
		body := "# " + summary + "\n# outcome\tcell\tdetail\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join("..", "matrix", "outcomes-"+release+".tsv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clean(t)
}
