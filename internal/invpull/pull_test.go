package invpull

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// nodeFile is the file gpumemd writes for a lab node: discovered through NVML (the
// lab's fake node), as gpumemd discovers a real one.
func nodeFile(t *testing.T, name string) []byte {
	t.Helper()
	src, err := nvmlsrc.Open("fake:../../test/lab/nodes/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n, err := discover.Node(src, discover.OptionsFor(src, name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := inventory.Cluster{Nodes: []inventory.Node{n}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve answers /inventory with h, on a real listener.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /inventory", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func bytesOf(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.Write(b) }
}

func TestPullTakesGoodNodesAndSkipsHostileOnes(t *testing.T) {
	n1, n2 := nodeFile(t, "n1"), nodeFile(t, "n2")
	cases := []struct {
		node, want string // want: "" for a good pull, else part of the error
		h          http.HandlerFunc
	}{
		{"n1", "", bytesOf(n1)},
		{"n2", "", bytesOf(n2)},
		{"n3", "not of n3 alone", bytesOf(n1)}, // answers as another node
		{"n4", "inventory:", bytesOf([]byte("<html>garbage</html>"))},
		{"n5", "format version 99", bytesOf([]byte(`{"version": 99, "nodes": [{"name": "n5", "gpus": []}]}`))},
		{"n6", "more than", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(inventory.MaxNodeFileBytes+1))
			w.Write([]byte("{"))
		}},
		{"n7", "more than", func(w http.ResponseWriter, _ *http.Request) { // no length: streamed
			w.Write([]byte(`{"nodes": [{"name": "n7", "gpus": [], "features": ["`))
			chunk := []byte(strings.Repeat("x", 64<<10))
			for i := 0; i < 2*inventory.MaxNodeFileBytes/len(chunk); i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
		{"n8", "within", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}, // never answers
		{"n9", "404", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no inventory", http.StatusNotFound) }},
		{"n10", "redirected", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		}},
		{"n11", "memory_mib", bytesOf([]byte(`{"version": 1, "nodes": [{"name": "n11", "gpus": [{"type": "h100", "memory_mib": 0}]}]}`))},
	}
	var targets []Target
	for _, c := range cases {
		targets = append(targets, Target{Node: c.node, Addr: serve(t, c.h)})
	}
	// A port where nothing listens (gpumemd on loopback only, seen from the controller).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cases = append(cases, struct {
		node, want string
		h          http.HandlerFunc
	}{"n12", "gpumemd listens on loopback unless its Listen says otherwise", nil})
	targets = append(targets, Target{Node: "n12", Addr: closed})
	// Long enough that n7's 32 MiB stream reaches the size limit before the deadline on a
	// loaded 2-core machine under -race (500 ms did not, once); n8 costs all of it.
	timeout := 3 * time.Second
	p := Puller{URL: "http://{addr}/inventory", Timeout: timeout}
	start := time.Now()
	res := p.Pull(context.Background(), targets)
	if took := time.Since(start); took > 2*timeout+2*time.Second {
		t.Errorf("pull took %v: a slow node must cost only its own timeout (%v)", took, timeout)
	}
	for i, c := range cases {
		r := res[i]
		switch {
		case r.Target.Node != c.node:
			t.Errorf("result %d is for %s, want %s", i, r.Target.Node, c.node)
		case c.want == "" && r.Err != nil:
			t.Errorf("%s: %v", c.node, r.Err)
		case c.want == "" && (r.Node.Name != c.node || len(r.Node.GPUs) == 0):
			t.Errorf("%s: pulled %+v", c.node, r.Node)
		case c.want != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), c.want)):
			t.Errorf("%s: err %v; want one saying %q", c.node, r.Err, c.want)
		}
	}
}

func TestURLFor(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		t    Target
		want string
	}{
		{"", Target{Node: "g1", Addr: "10.0.0.5"}, "http://10.0.0.5:9402/inventory"},
		{"", Target{Node: "g1"}, "http://g1:9402/inventory"},
		{"", Target{Node: "g1", Addr: "fd00::5"}, "http://[fd00::5]:9402/inventory"},
		{"https://{node}.gpu.example:9402/inventory", Target{Node: "g1", Addr: "10.0.0.5"}, "https://g1.gpu.example:9402/inventory"},
	} {
		if got := (Puller{URL: c.tmpl}).URLFor(c.t); got != c.want {
			t.Errorf("URLFor(%q, %+v) = %s, want %s", c.tmpl, c.t, got, c.want)
		}
	}
	for _, bad := range []string{"ftp://{addr}/x", "http://10.0.0.5:9402/inventory"} {
		if err := CheckURL(bad); err == nil {
			t.Errorf("CheckURL(%q) accepted it", bad)
		}
	}
}
