package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/units"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/versioned"
)

func init() { subcommands = append(subcommands, newJobsCmd) }

type jobsFlags struct {
	urls         []string
	since        time.Duration
	limit        int
	asJSON       bool
	user         string
	passwordFile string
	caFile       string
	timeout      time.Duration
}

func newJobsCmd() *cobra.Command {
	var f jobsFlags
	var out *output
	cmd := &cobra.Command{
		Use:         "jobs [JOBID]",
		Annotations: manExitStatus(nodesExitStatus),
		Short:       "Show per-job GPU memory history (slice, peak, mean) from gpumemd on one or more nodes",
		Long: `Without JOBID, list the jobs each node's gpumemd saw recently: the slice Slurm
allocated, the peak and mean GPU memory the job really held, its GPUs and when it ran.
With JOBID, show that job and its downsampled samples (each the highest use in its
bucket). Nodes are given as gpumemd URLs; with TLS or basic auth (the node's
--web.config.file), pass --ca-file, --user and --password-file.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := f.clients()
			if err != nil {
				return err
			}
			if f.asJSON {
				out.format = formatJSON
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			if len(args) == 1 {
				if _, err := strconv.ParseUint(args[0], 10, 64); err != nil {
					return usageError(fmt.Errorf("job id %q: want a Slurm job number such as 1234", args[0]))
				}
				return showJob(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), clients, args[0], out.format)
			}
			return listJobs(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), clients, time.Now().Add(-f.since).Unix(), f.limit, out.format)
		},
	}
	fs := cmd.Flags()
	f.addFlags(fs, 24*time.Hour, 100)
	out = addOutput(fs, formatTable, formatJSON, formatCSV)
	fs.BoolVar(&f.asJSON, "json", false, "print JSON instead of a table (-o json)")
	_ = fs.MarkDeprecated("json", "use -o json")
	return cmd
}

// addFlags adds the flags that reach the nodes' gpumemd and bound what is read.
func (f *jobsFlags) addFlags(fs *pflag.FlagSet, since time.Duration, limit int) {
	fs.StringSliceVar(&f.urls, "url", []string{"http://localhost:9402"}, "gpumemd base URL(s), e.g. https://gpu01:9402 (repeat or comma-separate for several nodes)")
	cliflag.DurationVar(fs, &f.since, "since", since, "jobs seen within this long")
	fs.IntVar(&f.limit, "limit", limit, "at most this many jobs per node (1-10000)")
	fs.StringVar(&f.user, "user", "", "basic auth user")
	fs.StringVar(&f.passwordFile, "password-file", "", "file holding the basic auth password")
	fs.StringVar(&f.caFile, "ca-file", "", "CA certificate (PEM) that signed the nodes' TLS certificates")
	cliflag.DurationVar(fs, &f.timeout, "timeout", 10*time.Second, "give up on the nodes after this long")
}

func (f jobsFlags) clients() ([]api.Client, error) {
	if f.limit < 1 || f.limit > 10000 {
		return nil, usageError(fmt.Errorf("--limit %d: want 1 to 10000", f.limit))
	}
	if f.since <= 0 {
		return nil, usageError(fmt.Errorf("--since %s: want a positive duration such as 24h", f.since))
	}
	var password string
	if f.passwordFile != "" {
		b, err := os.ReadFile(f.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--password-file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	hc := &http.Client{}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", f.caFile)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	var out []api.Client
	for _, u := range f.urls {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, usageError(fmt.Errorf("--url %q: want http://HOST:PORT or https://HOST:PORT", u))
		}
		out = append(out, api.Client{Base: u, HTTP: hc, User: f.user, Password: password})
	}
	return out, nil
}

// askEach asks every node; one that does not answer is named in a warning on errOut
// and left out, so the others' answers still print, as inventory pull does. left is
// the status 1 to return after printing when some node did not answer; err is set
// when none did (a single node's error as it is).
func askEach(errOut io.Writer, clients []api.Client, ask func(api.Client) error) (left, err error) {
	var failed []error
	for _, c := range clients {
		e := ask(c)
		if e == nil {
			continue
		}
		e = unreachable(c.Base, e)
		if len(clients) == 1 {
			return nil, e
		}
		failed = append(failed, e)
		fmt.Fprintf(errOut, "warning: node %s: %v; its jobs are left out\n", jobHost(c.Base), e)
	}
	switch {
	case len(failed) == 0:
		return nil, nil
	case len(failed) == len(clients):
		return nil, fmt.Errorf("none of the %d nodes answered (see the warnings above)", len(clients))
	}
	return exitStatus{1, fmt.Errorf("%d of %d nodes did not answer (see the warnings above): their jobs are left out", len(failed), len(clients))}, nil
}

// thenLeft is what a command returns after printing: the printing's error, else that
// some node was left out.
func thenLeft(printed, left error) error {
	if printed != nil {
		return printed
	}
	return left
}

// nodeJobs is one node's answer in jobs -o json.
type nodeJobs struct {
	URL  string    `json:"url"`
	Jobs []api.Job `json:"jobs"`
}

// nodeJob is one node's record of the job in jobs JOBID -o json.
type nodeJob struct {
	URL     string       `json:"url"`
	Job     api.Job      `json:"job"`
	Samples []api.Sample `json:"samples"`
}

func listJobs(ctx context.Context, w, errOut io.Writer, clients []api.Client, since int64, limit int, format string) error {
	var all []nodeJobs
	left, err := askEach(errOut, clients, func(c api.Client) error {
		l, err := c.Jobs(ctx, since, limit)
		if err == nil {
			all = append(all, nodeJobs{c.Base, l.Jobs})
		}
		return err
	})
	if err != nil {
		return err
	}
	return thenLeft(printJobs(w, all, format), left)
}

func printJobs(w io.Writer, all []nodeJobs, format string) error {
	switch format {
	case formatJSON:
		return writeJSON(w, versioned.NewJobs(all))
	case formatCSV:
		// Raw numbers for programs: bytes and Unix seconds.
		r := rows{head: []string{"node", "job_id", "kind", "alloc_bytes", "peak_bytes", "mean_bytes", "gpus", "start_unix", "last_seen_unix", "state"}}
		for _, n := range all {
			for _, j := range n.Jobs {
				r.add(jobHost(n.URL), j.ID, j.Kind, strconv.FormatInt(j.AllocBytes, 10), strconv.FormatInt(j.PeakBytes, 10),
					strconv.FormatFloat(j.MeanBytes, 'f', 0, 64), jobInts(j.GPUs), strconv.FormatInt(j.Start, 10), strconv.FormatInt(j.End, 10), jobState(j))
			}
		}
		return r.write(w, formatCSV)
	}
	r := rows{head: []string{"NODE", "JOBID", "KIND", "ALLOCATED", "PEAK", "MEAN", "GPUS", "START", "LAST SEEN", "STATE"}}
	for _, n := range all {
		for _, j := range n.Jobs {
			r.add(jobHost(n.URL), j.ID, j.Kind, units.ShortGiB(float64(j.AllocBytes)), units.ShortGiB(float64(j.PeakBytes)), units.ShortGiB(j.MeanBytes),
				jobInts(j.GPUs), jobStamp(j.Start), jobStamp(j.End), jobState(j))
		}
	}
	return r.write(w, formatTable)
}

func showJob(ctx context.Context, w, errOut io.Writer, clients []api.Client, id string, format string) error {
	var found []api.JobDetail
	var nodes []string
	left, err := askEach(errOut, clients, func(c api.Client) error {
		d, err := c.Job(ctx, id)
		if err != nil && strings.Contains(err.Error(), "no such job") {
			return nil
		}
		if err == nil {
			found, nodes = append(found, d), append(nodes, c.Base)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(found) == 0 {
		if left != nil {
			return fmt.Errorf("job %s: not in the history of the nodes that answered; %w", id, left)
		}
		return fmt.Errorf("job %s: not in the history of %d node(s) asked", id, len(clients))
	}
	return thenLeft(printJob(w, found, nodes, format), left)
}

func printJob(w io.Writer, found []api.JobDetail, nodes []string, format string) error {
	switch format {
	case formatJSON:
		var each []nodeJob
		for i, d := range found {
			each = append(each, nodeJob{nodes[i], d.Job, d.Samples})
		}
		return writeJSON(w, versioned.NewJob(each))
	case formatCSV:
		r := rows{head: []string{"node", "job_id", "time_unix", "used_bytes"}}
		for i, d := range found {
			for _, s := range d.Samples {
				r.add(jobHost(nodes[i]), d.Job.ID, strconv.FormatInt(s.T, 10), strconv.FormatInt(s.UsedBytes, 10))
			}
		}
		return r.write(w, formatCSV)
	}
	for i, d := range found {
		j := d.Job
		fmt.Fprintf(w, "job %s on %s: %s, allocated %s, peak %s, mean %s, GPUs %s, %s to %s (%s)\n", j.ID, jobHost(nodes[i]), j.Kind,
			units.ShortGiB(float64(j.AllocBytes)), units.ShortGiB(float64(j.PeakBytes)), units.ShortGiB(j.MeanBytes), jobInts(j.GPUs), jobStamp(j.Start), jobStamp(j.End), jobState(j))
		tw := newTable(w)
		fmt.Fprintln(tw, "  TIME\tUSED")
		for _, s := range d.Samples {
			fmt.Fprintf(tw, "  %s\t%s\n", jobStamp(s.T), units.ShortGiB(float64(s.UsedBytes)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func jobStamp(unix int64) string { return time.Unix(unix, 0).Format("2006-01-02 15:04:05") }

func jobState(j api.Job) string {
	if j.Running {
		return "running"
	}
	return "ended"
}

func jobInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func jobHost(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	h, _, _ := strings.Cut(u, "/")
	return h
}

// unreachable says what to do when no gpumemd answers at base, instead of the dialer's
// "connection refused"; other errors pass through.
func unreachable(base string, err error) error {
	var op *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("no gpumemd answers at %s (%v): check that gpumemd runs on that node (systemctl status gpumemd) "+
			"and listens there (its --listen is loopback by default; :9402 serves other hosts), or name the node with --url", base, err)
	}
	return err
}
