package main

import (
	"encoding/json"
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
// charted (and are what the soak benchmark reads). /api answers on a listener that is
// not loopback only with TLS/basic auth (a web config) or when APIPublic says so: the
// history names every job of the node with its sizes and times.
func newServer(d *daemon, addr net.Addr) *http.Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(d.exporter, metrics.NewBuildInfo(), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	switch {
	case !apiAllowed(d.opt, addr):
		mux.HandleFunc("GET /api/", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "the job history is not served on a non-loopback listener without --web.config.file (TLS, basic auth); set APIPublic = yes to serve it anyway"})
		})
	case d.hist != nil:
		mux.Handle("GET /api/", d.hist.Handler())
	default:
		mux.HandleFunc("GET /api/", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "history is off on this node (gpumemd --history-db is empty)"})
		})
	}
	mux.HandleFunc("GET /inventory", d.serveInventory)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "gpumemd on %s\n/metrics       Prometheus metrics\n/inventory     this node's GPU inventory (JSON), for gpumemctl inventory pull\n/api/jobs      per-job GPU memory history (JSON)\n/api/jobs/ID   one job with its samples\n", d.node)
	})
	// Timeouts bound what a slow or idle client can hold: a scrape is small and quick.
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// serveInventory answers with the inventory file gpumemd wrote for this node
// (InventoryDir/NODE.json), as it is on disk, so that a controller without a shared
// /etc/slurm can pull it (gpumemctl inventory pull, configless Slurm). It says what GPUs
// the node has, nothing of its jobs or users, so it answers on any listener, like
// /metrics. Only the file gpumemd itself writes is ever read: the path is built from the
// node name gpumemd was started with, never from the request.
func (d *daemon) serveInventory(w http.ResponseWriter, _ *http.Request) {
	fail := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
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

// apiAllowed reports whether /api may answer on the listener at addr.
func apiAllowed(opt options, addr net.Addr) bool {
	if opt.APIPublic || opt.WebConfigFile != "" {
		return true
	}
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
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
