package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/versioned"
)

// mig status: the desired-layout files against the inventory (mig.Status), printed.

// notAsDesired is mig status's verdict, so that it can be an assert: status 1 while any
// GPU is not as desired (or not known), said in the table or, for programs, on stderr.
func notAsDesired(w io.Writer, differ int, table bool) error {
	if differ == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d GPU(s) not yet as desired", differ)
	if table {
		fmt.Fprintln(w, msg)
		return exitStatus{code: 1}
	}
	return exitStatus{1, errors.New(msg)}
}

func newMigStatusCmd() *cobra.Command {
	var desired, inv string
	var out *output
	cmd := &cobra.Command{
		Use:         "status",
		Annotations: manExitStatus(migStatusExitStatus),
		Short:       "Show each node's desired MIG layout against the one it has",
		Long: `Reads every desired-layout file (NODE.json) in --desired and the inventory gpumemd
writes, and prints per GPU the desired and actual layouts: "ok" where they agree,
"differs" where gpumemd has yet to apply (or could not), "unknown" where the inventory
lacks the node or GPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := migDefaults(cmd, func(c config.MIG, changed func(string) bool) {
				if !changed("desired") && c.Desired != "" {
					desired = c.Desired
				}
			}); err != nil {
				return err
			}
			c, err := loadInventory(inv)
			if err != nil {
				return err
			}
			ds, err := loadDesired(desired)
			if err != nil {
				return err
			}
			status, differ := mig.Status(ds, c) // ds checked by loadDesired
			w := cmd.OutOrStdout()
			if out.format == formatJSON {
				if err := writeJSON(w, versioned.NewMIGStatus(status, differ)); err != nil {
					return err
				}
				return notAsDesired(w, differ, false)
			}
			r := rows{head: []string{"node", "gpu", "state", "desired", "actual"}}
			if out.format == formatTable {
				r.head = []string{"NODE", "GPU", "STATE", "DESIRED", "ACTUAL"}
			}
			for _, st := range status {
				actual := st.Actual
				if st.State == "unknown" {
					actual = "?"
				}
				if out.format == formatTable {
					r.add(st.Node, strconv.Itoa(st.GPU), st.State, show(st.Desired), show(actual))
				} else {
					r.add(st.Node, strconv.Itoa(st.GPU), st.State, st.Desired, st.Actual)
				}
			}
			if err := r.write(w, out.format); err != nil {
				return err
			}
			if out.format == formatTable {
				drawStatus(w, status)
			}
			return notAsDesired(w, differ, out.format == formatTable)
		},
	}
	out = addOutput(cmd.Flags(), formatTable, formatJSON, formatCSV)
	cmd.Flags().StringVar(&desired, "desired", "/etc/slurm/gpumem-mig.d", "directory of desired-layout files (NODE.json); [mig] Desired")
	cmd.Flags().StringVar(&inv, "inventory", "/etc/slurm/gpumem.d", "the inventory gpumemd writes (file or directory of NODE.json)")
	return cmd
}

// drawStatus draws each GPU's memory slots below the table, desired over actual.
func drawStatus(w io.Writer, status []mig.GPUState) {
	drawn := false
	for _, st := range status {
		pic := st.Picture()
		if pic == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s GPU %d (%s), memory slots:\n", st.Node, st.GPU, st.Model)
		for _, l := range pic {
			fmt.Fprintln(w, l)
		}
		drawn = true
	}
	if drawn {
		fmt.Fprintln(w)
	}
}

func show(l string) string {
	if l == "" {
		return "(no instances)"
	}
	return l
}

// loadDesired reads every NODE.json of dir, in name order.
func loadDesired(dir string) ([]mig.Desired, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []mig.Desired
	for _, name := range names {
		b, err := atomicfile.Read(name)
		if err != nil {
			return nil, err
		}
		d, err := mig.DecodeDesired(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no desired-layout file (NODE.json) in %s: write them with gpumemctl mig plan --out", dir)
	}
	return out, nil
}
