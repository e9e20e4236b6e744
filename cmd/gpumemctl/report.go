package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/history/api"
	memreport "github.com/gpumem/gpumem/internal/report"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/versioned"
)

func init() { subcommands = append(subcommands, newReportCmd) }

type reportFlags struct {
	pol        policyFlags
	start, end string
	by         string
	out        *output
	accounts   string
	users      string
	partitions string
	sacct      string
	gpumemd    []string
	timeout    time.Duration
}

func newReportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report",
		Short: "GPU-memory hours (GiB·h) per account, user and partition, from Slurm's accounting",
		Long: `Sum, from sacct (Slurm's accounting database, through slurmdbd), the GPU memory each
job held times the hours it held it within the period: GiB·h allocated, per account, user
and partition. A shard counts its unit, a MIG instance and a whole GPU their GiB
equivalents (gpumemctl policy), so a 20 GiB slice, a 2g.20gb instance and a quarter of an
80 GiB GPU cost the same. Every run of a requeued job counts. With --gpumemd, the GiB·h
the jobs really used, as those nodes' gpumemd measured them, where every run of a row
was measured.`,
		Example: `  gpumemctl report --start 2026-11-01 --end 2026-12-01
  gpumemctl report --by account -o csv
  gpumemctl report --accounts teama -o json --gpumemd http://gpu01:9402,http://gpu02:9402`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.pol.addFlags(cmd)
	fs := cmd.Flags()
	when := func(v string) error { _, err := reportTime(v); return err }
	fs.VarP(cliflag.NewChecked(&f.start, when), "start", "S", "period start: YYYY-MM-DD[THH:MM[:SS]] (local time); default 7 days before --end")
	fs.VarP(cliflag.NewChecked(&f.end, when), "end", "E", "period end, as --start; default now")
	fs.StringVar(&f.by, "by", "account,user,partition", "group rows by these, comma-separated")
	f.out = addOutput(fs, formatTable, formatJSON, formatCSV)
	fs.StringVarP(&f.accounts, "accounts", "A", "", "only these accounts (comma-separated, as sacct -A)")
	fs.StringVarP(&f.users, "users", "u", "", "only these users (comma-separated, as sacct -u)")
	fs.StringVarP(&f.partitions, "partitions", "r", "", "only these partitions (comma-separated, as sacct -r)")
	fs.StringVar(&f.sacct, "sacct", "sacct", "the sacct command")
	fs.StringSliceVar(&f.gpumemd, "gpumemd", nil, "gpumemd base URLs whose history gives the GiB·h used (comma-separated)")
	cliflag.DurationVar(fs, &f.timeout, "timeout", 60*time.Second, "give up on sacct and the nodes after this long")
	return cmd
}

// reportTime reads a period bound in local time.
func reportTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS", s)
}

func (f *reportFlags) period(now time.Time) (time.Time, time.Time, error) {
	to := now
	if f.end != "" {
		t, err := reportTime(f.end)
		if err != nil {
			return to, to, fmt.Errorf("--end %w", err)
		}
		to = t
	}
	from := to.Add(-7 * 24 * time.Hour)
	if f.start != "" {
		t, err := reportTime(f.start)
		if err != nil {
			return to, to, fmt.Errorf("--start %w", err)
		}
		from = t
	}
	if !to.After(from) {
		return to, to, fmt.Errorf("the period ends (%s) before it starts (%s)", to.Format(time.DateTime), from.Format(time.DateTime))
	}
	return from, to, nil
}

func (f *reportFlags) run(cmd *cobra.Command) error {
	now := time.Now()
	from, to, err := f.period(now)
	if err != nil {
		return err
	}
	group, err := memreport.ParseGroup(f.by)
	if err != nil {
		return err
	}
	eq, err := f.pol.equivalents(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	args := []string{"-a", "-X", "-D", "-P", "-n", "--format=" + memreport.SacctFormat,
		"-S", from.Format("2006-01-02T15:04:05"), "-E", to.Format("2006-01-02T15:04:05")}
	for flag, v := range map[string]string{"-A": f.accounts, "-u": f.users, "-r": f.partitions} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	// Epoch times: no time zone to guess.
	r := slurmcli.Runner{Path: f.sacct, Timeout: f.timeout, Env: []string{"SLURM_TIME_FORMAT=%s"}}
	out, err := r.Run(ctx, args...)
	if err != nil {
		return err
	}
	runs, err := memreport.ParseSacct(out)
	if err != nil {
		return err
	}
	var used memreport.Used
	if len(f.gpumemd) > 0 {
		used, err = gpumemdUse(ctx, f.gpumemd, from)
		if err != nil {
			return err
		}
	}
	rows := memreport.Summarize(runs, eq, group, from, to, now, used)
	return writeReport(cmd.OutOrStdout(), f.out.format, rows, group, from, to)
}

// gpumemdUse reads each node's job history and values a run by the mean memory its
// job used on all nodes times the hours of the run within the period.
func gpumemdUse(ctx context.Context, urls []string, since time.Time) (memreport.Used, error) {
	meanGiB := map[string]float64{}
	for _, u := range urls {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, usageError(fmt.Errorf("--gpumemd %q: want http://HOST:PORT or https://HOST:PORT", u))
		}
		l, err := api.Client{Base: u}.Jobs(ctx, since.Unix(), 10000)
		if err != nil {
			return nil, unreachable(u, err)
		}
		for _, j := range l.Jobs {
			meanGiB[j.ID] += j.MeanBytes / (1 << 30)
		}
	}
	return func(r memreport.Run, from, to time.Time) (float64, bool) {
		g, ok := meanGiB[r.JobID]
		return g * to.Sub(from).Hours(), ok
	}, nil
}

func fmtGiBh(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

func writeReport(w io.Writer, format string, all []memreport.Row, g memreport.Group, from, to time.Time) error {
	has := map[string]bool{}
	for _, k := range g {
		has[k] = true
	}
	keys := func(r memreport.Row) []string {
		var k []string
		for _, name := range []string{"account", "user", "partition"} {
			if has[name] {
				k = append(k, map[string]string{"account": r.Account, "user": r.User, "partition": r.Partition}[name])
			}
		}
		return k
	}
	var head []string
	for _, name := range []string{"account", "user", "partition"} {
		if has[name] {
			head = append(head, name)
		}
	}
	used := func(r memreport.Row) string {
		if r.UsedGiBh == nil {
			return ""
		}
		return fmtGiBh(*r.UsedGiBh)
	}
	switch format {
	case formatJSON:
		return writeJSON(w, versioned.NewReport(from.Unix(), to.Unix(), all))
	case formatCSV:
		out := rows{head: append(head, "runs", "alloc_gib_hours", "used_gib_hours")}
		for _, r := range all {
			out.add(append(keys(r), strconv.Itoa(r.Runs), fmtGiBh(r.AllocGiBh), used(r))...)
		}
		return out.write(w, formatCSV)
	}
	fmt.Fprintf(w, "GPU memory held %s .. %s (GiB·h)\n", from.Format("2006-01-02 15:04:05"), to.Format("2006-01-02 15:04:05"))
	table := rows{head: strings.Split(strings.ToUpper(strings.Join(append(head, "runs", "allocated", "used"), "\t")), "\t")}
	var total float64
	unvalued := 0
	for _, r := range all {
		u := used(r)
		if u == "" {
			u = "-"
		}
		table.add(append(keys(r), strconv.Itoa(r.Runs), fmtGiBh(r.AllocGiBh), u)...)
		total += r.AllocGiBh
		unvalued += r.Unvalued
	}
	if err := table.write(w, formatTable); err != nil {
		return err
	}
	fmt.Fprintf(w, "total allocated: %s GiB·h\n", fmtGiBh(total))
	if unvalued > 0 {
		fmt.Fprintf(w, "note: %d run(s) held GPUs whose type is not in the inventory or AccountingStorageTRES; their GPUs count 0 (gpumemctl policy prints the TRES to track)\n", unvalued)
	}
	return nil
}
