package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/metrics"
)

// newServer routes /metrics, /api/jobs (history) and a small index page. The process
// and Go runtime collectors come along so the sidecar's own CPU and memory can be
// charted (and are what the soak benchmark reads). /api is gated (apiHandler): the
// history names every job of the node with its sizes and times.
func newServer(d *daemon, addr net.Addr) *http.Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(d.exporter, metrics.NewBuildInfo(), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Timeouts bound what a slow or idle client can hold: a scrape is small and quick.
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /api/", d.apiHandler(srv, addr))
	mux.HandleFunc("GET /inventory", d.serveInventory)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "gpumemd on %s\n/metrics       Prometheus metrics\n/inventory     this node's GPU inventory (JSON), for gpumemctl inventory pull\n/api/jobs      per-job GPU memory history (JSON)\n/api/jobs/ID   one job with its samples\n", d.node)
	})
	srv.Handler = mux
	return srv
}

// serveInventory answers with the inventory file gpumemd wrote for this node
// (InventoryDir/NODE.json), as it is on disk, so that a controller without a shared
// /etc/slurm can pull it (gpumemctl inventory pull, configless Slurm). It says what GPUs
// the node has, nothing of its jobs or users, so it answers on any listener, like
// /metrics. Only the file gpumemd itself writes is ever read: the path is built from the
// node name gpumemd was started with, never from the request.
func (d *daemon) serveInventory(w http.ResponseWriter, _ *http.Request) {
	fail := func(code int, msg string) { jsonError(w, code, msg) }
	if !d.opt.WriteInventory {
		fail(http.StatusNotFound, "this gpumemd writes no inventory: set WriteInventory = yes in its [gpumemd] section (or --write-inventory)")
		return
	}
	path := filepath.Join(d.opt.InventoryDir, d.node+".json")
	b, err := atomicfile.ReadCapped(path, inventory.MaxNodeFileBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fail(http.StatusServiceUnavailable, "no inventory written yet (NVML not read yet, or the node is unhealthy)")
		return
	case err != nil:
		d.log.Error("serving the inventory", "path", path, "err", err)
		fail(http.StatusInternalServerError, "the inventory file cannot be read; see gpumemd's log")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// serve runs the server on ln with the exporter-toolkit, which adds TLS and basic auth
// from the web config file (none: plain HTTP). A closed server is a clean end.
func serve(srv *http.Server, ln net.Listener, webConfig string, log *slog.Logger) error {
	systemd := false
	err := web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &[]string{ln.Addr().String()},
		WebSystemdSocket: &systemd, WebConfigFile: &webConfig}, log)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// exposes says, for the start log, what a listener on addr answers to whom, so that an
// admin who opens a port sees what is behind it: /metrics to anyone who can reach it,
// /inventory (GPUs, no jobs) likewise when written, and /api (every job's history)
// only on loopback, with APIPublic, or under the web config's TLS or auth.
func (d *daemon) exposes(addr net.Addr) []any {
	tcp, ok := addr.(*net.TCPAddr)
	loop := ok && tcp.IP.IsLoopback()
	inv := "off (WriteInventory = no)"
	if d.opt.WriteInventory {
		inv = "on"
	}
	api := "open: loopback only"
	switch {
	case d.opt.APIPublic:
		api = "open to anyone who reaches it (APIPublic = yes)"
	case !loop && d.opt.WebConfigFile != "":
		api = "only if the web config " + d.opt.WebConfigFile + " puts TLS or auth in force (checked per request)"
	case !loop:
		api = "refused (403): not loopback, no web config with TLS or auth, APIPublic = no"
	}
	return []any{"metrics", "on", "inventory", inv, "api", api, "tls_auth", d.opt.WebConfigFile != ""}
}

// serveHTTP serves /metrics, /inventory and /api on --listen until ctx ends. A port it
// cannot have (another process bound it first, the address is not yet up) or a server
// that stops on its own is a fault gpumemd lives through: it is logged and counted
// (duty "listen"), and the listen is retried on a backoff while every other duty goes
// on. ready, when not nil, receives the address once it listens.
func (d *daemon) serveHTTP(ctx context.Context, ready chan<- string) {
	var b backoff
	for ctx.Err() == nil {
		ln, err := net.Listen("tcp", d.opt.Listen)
		if err != nil {
			d.duties.fail("listen", fmt.Errorf("--listen %s: %w", d.opt.Listen, err))
			b.wait(ctx)
			continue
		}
		d.duties.up("listen")
		b.reset()
		d.log.Info("listening", append([]any{"addr", ln.Addr().String()}, d.exposes(ln.Addr())...)...)
		srv := newServer(d, ln.Addr())
		served := make(chan error, 1)
		go func() { served <- serve(srv, ln, d.opt.WebConfigFile, d.log) }()
		if ready != nil {
			ready <- ln.Addr().String()
			ready = nil
		}
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(shut)
			cancel()
			<-served
			return
		case err := <-served:
			if err == nil {
				err = errors.New("stopped")
			}
			d.duties.fail("listen", fmt.Errorf("HTTP server on %s: %w", ln.Addr(), err))
			ln.Close()
			b.wait(ctx)
		}
	}
}
