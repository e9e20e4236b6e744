package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/inventory"
)

func init() { subcommands = append(subcommands, newInventoryCmd) }

func newInventoryCmd() *cobra.Command {
	var src nodeSource
	var format string
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Print the GPU inventory (from NVML or an inventory file) as JSON or a table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(format, "json", "table"); err != nil {
				return err
			}
			c, err := src.load(cmd)
			if err != nil {
				return err
			}
			if format == "table" {
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
	src.addFlags(cmd)
	addOutput(cmd.Flags(), &format, "json", "json (what the plugin reads)", "table")
	cmd.Flags().StringVar(&format, "format", "json", "json or table")
	_ = cmd.Flags().MarkDeprecated("format", "use -o json or -o table")
	return cmd
}

func printTable(w io.Writer, c inventory.Cluster) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGPU\tDEVICE\tTYPE\tMEMORY MiB\tMIG\tCORES\tNAME / FILES")
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
			fmt.Fprintf(tw, "%s\t%d\t/dev/nvidia%d\t%s\t%d\t%s\t%s\t%s\n", n.Name, g.Index, g.Minor, g.Type, g.MemoryMiB, mig, g.Cores, g.Name)
			for _, in := range g.Instances {
				fmt.Fprintf(tw, "\t\t  GI %d CI %d @%d\t%s\t%d\t\t\t%v\n", in.GI, in.CI, in.Start, in.Profile, in.MemoryMiB, in.Files)
			}
		}
	}
	return tw.Flush()
}
