package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/bar"
	"github.com/gpumem/gpumem/internal/inventory"
)

func init() { subcommands = append(subcommands, newInventoryCmd) }

func newInventoryCmd() *cobra.Command {
	var src nodeSource
	var out *output
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Print the GPU inventory (from NVML or an inventory file) as JSON or a table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := src.load(cmd)
			if err != nil {
				return err
			}
			if out.format == formatTable {
				return printTable(cmd.OutOrStdout(), c)
			}
			b, err := c.Encode()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.AddCommand(newInventoryPullCmd())
	src.addFlags(cmd)
	// json first: the inventory's own document, what the plugins read.
	out = addOutput(cmd.Flags(), formatJSON, formatTable)
	cmd.Flags().Var(out, "format", "json or table")
	_ = cmd.Flags().MarkDeprecated("format", "use -o json or -o table")
	return cmd
}

func printTable(w io.Writer, c inventory.Cluster) error {
	tw := newTable(w)
	// FENCE is what holds a job to its slice there (inventory.GPU.FenceOf): hardware for
	// MIG, driver or mps where gpumemd found a limit that works, none where only its
	// kill does; gpumem.conf's Fence steers shard slices by it.
	// The bar draws each GPU's memory as long as it is against the largest GPU listed,
	// '#' the part its MIG instances hold: the inventory knows what the GPUs have and
	// how they are cut, not what jobs use (gpumemd's metrics and gpumemctl jobs do).
	fmt.Fprintln(tw, "NODE\tGPU\tDEVICE\tTYPE\tMEMORY MiB\tMEMORY (# in MIG instances)\tMIG\tFENCE\tCORES\tNAME / FILES")
	var largest int64
	for _, n := range c.Nodes {
		for _, g := range n.GPUs {
			largest = max(largest, g.MemoryMiB)
		}
	}
	for _, n := range c.Nodes {
		for _, g := range n.GPUs {
			mig := "off"
			switch {
			case g.MIG && !g.MIGPending:
				mig = "on (off after reset)"
			case g.MIG:
				mig = "on"
			case g.MIGPending:
				mig = "off (on after reset)"
			}
			var inInstances int64
			for _, in := range g.Instances {
				inInstances += in.MemoryMiB
			}
			fmt.Fprintf(tw, "%s\t%d\t/dev/nvidia%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", n.Name, g.Index, g.Minor, g.Type, g.MemoryMiB,
				bar.Scaled(inInstances, g.MemoryMiB, largest), mig, g.FenceOf(), g.Cores, g.Name)
			for _, in := range g.Instances {
				fmt.Fprintf(tw, "\t\t  GI %d CI %d @%d\t%s\t%d\t\t\t\t\t%v\n", in.GI, in.CI, in.Start, in.Profile, in.MemoryMiB, in.Files)
			}
		}
	}
	return tw.Flush()
}
