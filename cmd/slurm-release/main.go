// Command slurm-release prints what the release table (internal/slurmrel/releases.txt)
// says, for the scripts that build and test gpumem per Slurm release: the Makefile,
// cgo/build.sh, test/lab/lab.sh, test/e2e.sh, test/package-test.sh and
// packaging/build.sh ask it rather than name releases themselves.
//
//	slurm-release names [--ci] [--source] [--host] [--gate NAME]
//	                                      the releases, oldest first, one a line: those CI
//	                                      runs, built from source, the host's own, with a gate
//	slurm-release shell RELEASE           the release's row as shell assignments (SLURM_*)
//	slurm-release cheader                 cgo/include/gpumem_gates.h
//
// RELEASE is major.minor or any micro release of it (25.11.3); one the table lacks is
// refused by name. GPUMEM_RELEASE_TABLE names another table file (for tests).
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmrel"
)

const usage = "usage: slurm-release names [--ci] [--source] [--host] [--gate NAME] | shell RELEASE | cheader"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "slurm-release:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	t := slurmrel.Table()
	if p := os.Getenv("GPUMEM_RELEASE_TABLE"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if t, err = slurmrel.Parse(string(b)); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	switch {
	case args[0] == "names":
		keep, err := filter(t, args[1:])
		if err != nil {
			return err
		}
		for _, r := range t.Rows {
			if keep(r) {
				fmt.Fprintln(out, r.Name)
			}
		}
		return nil
	case args[0] == "shell" && len(args) == 2:
		r, err := t.Lookup(args[1])
		if err != nil {
			return err
		}
		fmt.Fprint(out, shell(t, r))
		return nil
	case args[0] == "cheader" && len(args) == 1:
		fmt.Fprint(out, slurmrel.CHeader(t))
		return nil
	}
	return fmt.Errorf("%s", usage)
}

// filter reads names' options: each narrows the list.
func filter(t *slurmrel.Releases, args []string) (func(slurmrel.Release) bool, error) {
	var keep []func(slurmrel.Release) bool
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--ci":
			keep = append(keep, func(r slurmrel.Release) bool { return r.CI })
		case "--source":
			keep = append(keep, func(r slurmrel.Release) bool { return r.FromSource() })
		case "--host":
			keep = append(keep, func(r slurmrel.Release) bool { return r.HostPorts != 0 })
		case "--gate":
			if i+1 == len(args) || !slices.ContainsFunc(t.Gates, func(g slurmrel.Gate) bool { return g.Name == args[i+1] }) {
				return nil, fmt.Errorf("names --gate: want one of the table's gates")
			}
			g := args[i+1]
			i++
			keep = append(keep, func(r slurmrel.Release) bool { return t.Has(r.Version, g) })
		default:
			return nil, fmt.Errorf("names %s: want --ci, --source, --host or --gate NAME", args[i])
		}
	}
	return func(r slurmrel.Release) bool {
		for _, k := range keep {
			if !k(r) {
				return false
			}
		}
		return true
	}, nil
}

// shell is r's row as shell assignments, values quoted for eval.
func shell(t *slurmrel.Releases, r slurmrel.Release) string {
	from, records, ci, micro := "debian", "none", "no", ""
	if r.FromSource() {
		from, micro = "source", r.SourceVersion().String()
	}
	if r.Records {
		records = "measured"
	}
	if r.CI {
		ci = "yes"
	}
	var gates []string
	for _, g := range t.Gates {
		if t.Has(r.Version, g.Name) {
			gates = append(gates, g.Name)
		}
	}
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprint(n)
	}
	kv := [][2]string{
		{"SLURM_REL", r.Name}, {"SLURM_FROM", from}, {"SLURM_SUITE", r.Suite}, {"SLURM_TAG", r.Tag}, {"SLURM_SOURCE_VERSION", micro},
		{"SLURM_PORTS", num(r.Ports)}, {"SLURM_PROM", num(r.Prometheus)}, {"SLURM_AUTH", r.Auth},
		{"SLURM_RECORDS", records}, {"SLURM_CI", ci},
		{"SLURM_HOST_PORTS", num(r.HostPorts)}, {"SLURM_HOST_PROM", num(r.HostPrometheus)},
		{"SLURM_GATES", strings.Join(gates, " ")},
	}
	var b strings.Builder
	for _, p := range kv {
		fmt.Fprintf(&b, "%s='%s'\n", p[0], p[1]) // the table's words hold no quote (Parse)
	}
	return b.String()
}
