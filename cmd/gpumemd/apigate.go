package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"time"
)

// apiHandler serves the job history on /api, or refuses it. It answers on a loopback
// listener, or anywhere with APIPublic (an admin's explicit choice). On any other
// listener it answers only when TLS or basic auth is really in force for the request:
// naming a web config file is not enough, since one that sets neither (or only
// headers, or a rate limit) serves plain, open HTTP. Whether it is in force is asked of
// the exporter-toolkit itself on each request (it re-reads the file on each request
// too, so an edit takes effect at once): the request came over TLS, or a request
// without credentials is refused by the server's own handler chain (authInForce).
func (d *daemon) apiHandler(srv *http.Server, addr net.Addr) http.HandlerFunc {
	tcp, ok := addr.(*net.TCPAddr)
	open := d.opt.APIPublic || ok && tcp.IP.IsLoopback()
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(probeKey{}) != nil {
			// authInForce's probe got through with no credentials.
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if !open {
			if why := d.apiRefusal(srv, r); why != "" {
				d.refusals.log(d, why, r.RemoteAddr)
				jsonError(w, http.StatusForbidden, why)
				return
			}
		}
		h := d.hist.Load()
		switch {
		case h != nil:
			h.Handler().ServeHTTP(w, r)
		case d.opt.HistoryDB == "":
			jsonError(w, http.StatusServiceUnavailable, "history is off on this node (gpumemd --history-db is empty)")
		default:
			jsonError(w, http.StatusServiceUnavailable, "the history cannot be opened now (gpumemd retries each poll); see gpumemd's log and gpumem_sidecar_duty_up{duty=\"history\"}")
		}
	}
}

// apiRefusal says why /api must not answer r on a listener that is neither loopback nor
// public by choice, "" when it may.
func (d *daemon) apiRefusal(srv *http.Server, r *http.Request) string {
	const public = "; set APIPublic = yes (--api-public) to serve it anyway"
	if d.opt.WebConfigFile == "" {
		return "the job history is not served on a non-loopback listener without TLS or basic auth (--web.config.file)" + public
	}
	if r.TLS != nil || authInForce(srv.Handler) {
		return ""
	}
	return "the job history is not served on a non-loopback listener without TLS or basic auth, and --web.config.file " +
		d.opt.WebConfigFile + " sets neither (tls_server_config, basic_auth_users)" + public
}

// probeKey marks authInForce's request, which apiHandler answers with 204.
type probeKey struct{}

// authInForce sends a request without credentials through h, the server's handler as
// the exporter-toolkit wrapped it (it replaces srv.Handler before it accepts the first
// connection, so a request handler reads its final value): a 401 means basic auth is
// in force. Anything else (the probe reached /api, the config cannot be read, a rate
// limit) counts as not in force, so a doubt refuses.
func authInForce(h http.Handler) bool {
	r, err := http.NewRequestWithContext(context.WithValue(context.Background(), probeKey{}, true), http.MethodGet, "/api/", nil)
	if err != nil {
		return false
	}
	var w statusOnly
	h.ServeHTTP(&w, r)
	return w.code == http.StatusUnauthorized
}

// statusOnly is a ResponseWriter that keeps only the status.
type statusOnly struct {
	code int
	h    http.Header
}

func (w *statusOnly) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *statusOnly) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *statusOnly) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// refusalLog logs why /api refused, at most once a minute per reason: a scanner
// hammering /api cannot flood the log, yet an admin sees why gpumemctl jobs fails.
type refusalLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (l *refusalLog) log(d *daemon, why, from string) {
	now := time.Now()
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	quiet := now.Sub(l.last[why]) < time.Minute
	if !quiet {
		l.last[why] = now
	}
	l.mu.Unlock()
	if !quiet {
		d.log.Warn("/api refused", "why", why, "from", from)
	}
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
