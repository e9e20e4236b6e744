package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/clusterview"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/metrics"
	"github.com/gpumem/gpumem/internal/refusalcount"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

func init() { subcommands = append(subcommands, newExporterCmd) }

type exporterFlags struct {
	listen, inventory, webConfig string
	slurmConf                    string
	refusals                     string
	unitMiB                      int64
	sizes                        sizeList
	interval                     time.Duration
}

func newExporterCmd() *cobra.Command {
	var f exporterFlags
	c := &cobra.Command{
		Use:   "exporter",
		Short: "Serve the cluster view to Prometheus: pending GPU-memory demand, waits, reasons, fragmentation, memory per partition",
		Long: `Runs on the controller (or any host with Slurm's client commands and the inventory).
Every --interval it reads the running jobs (scontrol -d show job), the pending ones
(squeue) and the inventory, and serves on --listen /metrics:

  gpumem_cluster_pending_jobs{size}, gpumem_cluster_pending_memory_bytes{size}
  gpumem_cluster_pending_oldest_wait_seconds{size}, ..._mean_wait_seconds{size}
  gpumem_cluster_pending_reason_jobs{reason}
  gpumem_cluster_free_memory_bytes, gpumem_cluster_stranded_memory_bytes,
  gpumem_cluster_fragmentation_ratio, gpumem_cluster_fragmentation_blocked_jobs
  gpumem_partition_memory_total_bytes{partition}, gpumem_partition_memory_allocated_bytes{partition}
  gpumem_refused_jobs_total{reason}, from job_submit's counts file (--refusal-counts)

Sizes are classes: the request per node rounded up to a power of two GiB; MIG and
whole-GPU jobs count at their GiB equivalents (as gpumemctl policy bills them). A scrape reads the
last view and never waits on Slurm. See docs/monitoring.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confShardUnit(cmd, &f.unitMiB); err != nil {
				return err
			}
			if !cmd.Flags().Changed("refusal-counts") {
				conf, err := sharedConf(cmd)
				if err != nil {
					return err
				}
				f.refusals = conf.RefusalCounts
			}
			if f.interval <= 0 || f.unitMiB <= 0 {
				return usageError(fmt.Errorf("--interval %s, --shard-unit %dM: want a positive duration such as 30s and a positive size such as 1G", f.interval, f.unitMiB))
			}
			if f.webConfig != "" {
				if err := web.Validate(f.webConfig); err != nil {
					return fmt.Errorf("--web.config.file %s: %w", f.webConfig, err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runExporter(ctx, f, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
		},
	}
	fl := c.Flags()
	// Loopback unless the admin says otherwise: the view names partitions and queue
	// figures, and the controller is no host to serve them to every network by default.
	f.listen = "127.0.0.1:9403"
	fl.Var(cliflag.NewChecked(&f.listen, func(v string) error { _, err := config.ParseListen(v); return err }), "listen", "address for /metrics (HOST:PORT, or :PORT for every interface)")
	fl.StringVar(&f.inventory, "inventory", "/etc/slurm/gpumem.d", "the plugins' inventory (file or directory of NODE.json)")
	fl.StringVar(&f.slurmConf, "slurm-conf", "/etc/slurm/slurm.conf", "slurm.conf, for each node's partitions (empty: the inventory's own)")
	f.unitMiB = shard.DefaultUnitMiB
	addShardUnit(fl, &f.unitMiB, "GPU memory per shard, as in gpumem.conf ShardUnit")
	addConfig(fl)
	f.sizes.mib = []int64{10 << 10, 20 << 10, 40 << 10}
	fl.Var(&f.sizes, "fragmentation-sizes", "request sizes fragmentation is measured against when no shard job pends, each with its unit, as gpumemd's")
	fl.Var(&f.sizes, "sizes", "as --fragmentation-sizes")
	_ = fl.MarkDeprecated("sizes", "use --fragmentation-sizes with units, such as --fragmentation-sizes 10G,20G,40G")
	fl.StringVar(&f.refusals, "refusal-counts", "", "job_submit's refusal counts file, none for no refusal series (default: gpumem.conf's RefusalCounts)")
	cliflag.DurationVar(fl, &f.interval, "interval", 30*time.Second, "time between two readings of Slurm")
	fl.StringVar(&f.webConfig, "web.config.file", "", "Prometheus exporter-toolkit web config for TLS and basic auth")
	return c
}

func runExporter(ctx context.Context, f exporterFlags, log *slog.Logger) error {
	e := clusterview.NewExporter()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e, metrics.NewBuildInfo())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	served := make(chan error, 1)
	go func() {
		systemd := false
		err := web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &[]string{ln.Addr().String()},
			WebSystemdSocket: &systemd, WebConfigFile: &f.webConfig}, log)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		served <- err
	}()
	log.Info("gpumemctl exporter started", "listen", ln.Addr().String(), "interval", f.interval)
	log.Info("listening", "address", ln.Addr().String(), "serves", exporterServes, "reachable", reachable(ln.Addr()), "auth", webAuth(f.webConfig))
	r := &clusterReader{f: f, reader: jobReader(), queue: queueRunner(), log: log}
	for {
		r.readRefusals(e, log)
		if source, err := r.read(ctx, e); err != nil {
			e.Fail(source)
			log.Error("cluster view", "source", source, "err", err)
		}
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut)
			return <-served
		case err := <-served:
			return err
		case <-time.After(f.interval):
		}
	}
}

// exporterServes is what the exporter's one listener exposes.
const exporterServes = "GET /metrics: the cluster view (pending GPU-memory demand by size, waits, reasons, fragmentation, memory per partition, job_submit's refusal counts) and gpumem_build_info"

// reachable says who can reach a listener bound to addr.
func reachable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	switch {
	case !ok:
		return addr.String()
	case tcp.IP.IsLoopback():
		return "this host only"
	case tcp.IP.IsUnspecified():
		return "every network this host is on"
	default:
		return "the networks of " + tcp.IP.String()
	}
}

// webAuth says what guards a listener: the exporter-toolkit web config, or nothing.
func webAuth(webConfig string) string {
	if webConfig == "" {
		return "none (no --web.config.file)"
	}
	return "TLS and basic auth as " + webConfig + " sets them"
}

// clusterReader reads one cluster view from Slurm's commands and the inventory.
type clusterReader struct {
	f      exporterFlags
	reader slurmcli.JobReader
	queue  slurmcli.Runner // the queue's client, for the pending jobs

	refusalErr string // why the refusal counts could not be read last time, logged once
	gpuErr     string // why typed-GPU demand could not be valued last time, logged once
	log        *slog.Logger
}

// readRefusals publishes job_submit's refusal counts, whatever Slurm answers: they come
// from a file of their own. A file that cannot be read is logged when the reason
// changes and exported as unreadable; it never fails the reading.
func (r *clusterReader) readRefusals(e *clusterview.Exporter, log *slog.Logger) {
	if r.f.refusals == "" || r.f.refusals == "none" {
		return
	}
	s, err := refusalcount.Read(r.f.refusals)
	why := ""
	if err != nil {
		why = err.Error()
		e.SetRefusals(nil)
	} else {
		e.SetRefusals(&s)
	}
	if why != r.refusalErr {
		if why != "" {
			log.Warn("no gpumem_refused_jobs_total: job_submit's refusal counts cannot be read (is job_submit/gpumem loaded, and RefusalCounts the same in this gpumem.conf?)", "file", r.f.refusals, "err", why)
		} else {
			log.Info("refusal counts read", "file", r.f.refusals)
		}
		r.refusalErr = why
	}
}

// read publishes a new view, or returns what failed (a clusterview.Sources entry).
func (r *clusterReader) read(ctx context.Context, e *clusterview.Exporter) (string, error) {
	in := clusterview.Input{UnitMiB: r.f.unitMiB, Sizes: r.f.sizes.shards(r.f.unitMiB), Now: time.Now()}
	var err error
	if in.Inventory, err = inventory.LoadPath(r.f.inventory); err != nil {
		return "inventory", err
	}
	if r.f.slurmConf != "" {
		// The partitions are slurm.conf's; the files gpumemd writes hold what NVML says.
		c, err := slurmconf.ParseFile(r.f.slurmConf)
		if err != nil {
			return "inventory", err
		}
		c.Annotate(&in.Inventory)
	}
	jobs, err := r.reader.Show(ctx, "")
	if err != nil {
		return "slurm", err
	}
	for _, j := range jobs.Jobs {
		if j.Holds() {
			in.Running = append(in.Running, j)
		}
	}
	queue, err := slurmcli.ReadPending(ctx, r.queue)
	if err != nil {
		return "slurm", err
	}
	if in.Pending, err = queue.Shards(time.Local); err != nil {
		return "slurm", err
	}
	typed, err := queue.GRES(time.Local)
	if err != nil {
		return "slurm", err
	}
	// MIG and whole-GPU jobs join the demand at their GiB equivalents; an inventory the
	// accounting policy cannot value leaves them out (logged) rather than the whole view.
	in.GPUPending, err = clusterview.GPUDemands(typed, in.Inventory, r.f.unitMiB)
	why := ""
	if err != nil {
		why = err.Error()
	}
	if why != r.gpuErr && why != "" {
		r.log.Warn("MIG and whole-GPU pending jobs are left out of the demand by size class", "err", why)
	}
	r.gpuErr = why
	if in.Reasons, err = slurmcli.PendingReasons(ctx, r.queue); err != nil {
		return "slurm", err
	}
	v, err := clusterview.Compute(in)
	if err != nil {
		return "compute", err
	}
	e.Set(v, in.Now)
	return "", nil
}
