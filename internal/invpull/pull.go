// Package invpull brings each GPU node's inventory to the controller over HTTP, for
// clusters where /etc/slurm is not shared (configless Slurm): gpumemd on every node
// serves the file it writes (GET /inventory) and the controller pulls it into the
// plugins' InventoryPath. What a node answers is untrusted input: it is read up to a cap,
// within a deadline, decoded and validated like any inventory file, and must describe
// the node it was asked for and no other; a node that answers anything else is skipped
// and its last good file kept. Of a node's answer only its name and GPUs are kept: the
// partitions, features, CPUs and memory of a node are the controller's slurm.conf's to say.
//
// Over plain HTTP nothing proves an answer comes from the node's gpumemd: any local user
// who holds the port first can answer for it. With TLS (Puller.TLS) the node must show a
// certificate from the site's CA that names it.
package invpull

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// DefaultURL is where gpumemd serves its inventory: {addr} is the node's address as
// Slurm reaches it (NodeAddr, else NodeHostname, else its name), {node} its name.
const DefaultURL = "http://{addr}:9402/inventory"

// DefaultTLSURL is DefaultURL over TLS, for a gpumemd with a web config's TLS.
const DefaultTLSURL = "https://{addr}:9402/inventory"

// Puller fetches node inventories.
type Puller struct {
	// URL is the template of each node's address (DefaultURL when empty).
	URL string
	// Timeout bounds each node's whole request, from connecting to the last byte.
	Timeout time.Duration
	// Parallel is how many nodes are asked at once (8 when 0).
	Parallel int
	// TLS, for https URLs, holds the site's CA (RootCAs) and any client certificate.
	// Each node is verified against its own name: its certificate must carry the Slurm
	// NodeName as a DNS name, whatever address the URL reaches it at.
	TLS *tls.Config
	// Client makes the requests; nil is a client that follows no redirect, with TLS.
	Client *http.Client
}

// Target is one node to pull, the address to reach it at and, when slurm.conf says,
// its CPUs (which bound the cores its GPUs may name; 0: unknown).
type Target struct {
	Node, Addr string
	CPUs       int
}

// Result is one node's answer: Node holds its inventory when Err is nil.
type Result struct {
	Target
	URL  string
	Node inventory.Node
	Err  error
}

// URLFor is the address of t's inventory.
func (p Puller) URLFor(t Target) string {
	tmpl := p.URL
	if tmpl == "" {
		tmpl = DefaultURL
	}
	addr := t.Addr
	if addr == "" {
		addr = t.Node
	}
	if ip := net.ParseIP(addr); ip != nil && ip.To4() == nil {
		addr = "[" + addr + "]" // an IPv6 address in a URL
	}
	return strings.NewReplacer("{node}", t.Node, "{addr}", addr).Replace(tmpl)
}

// CheckURL refuses a template that cannot name a node's inventory.
func CheckURL(tmpl string) error {
	if !strings.HasPrefix(tmpl, "http://") && !strings.HasPrefix(tmpl, "https://") {
		return fmt.Errorf("URL %q: want http:// or https://, e.g. %s", tmpl, DefaultURL)
	}
	if !strings.Contains(tmpl, "{addr}") && !strings.Contains(tmpl, "{node}") {
		return fmt.Errorf("URL %q names no node: put {addr} (the node's address) or {node} (its name) in it, e.g. %s", tmpl, DefaultURL)
	}
	return nil
}

// Pull asks every target, Parallel at a time, and returns one Result per target in order.
func (p Puller) Pull(ctx context.Context, targets []Target) []Result {
	out := make([]Result, len(targets))
	par := p.Parallel
	if par <= 0 {
		par = 8
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := Result{Target: t, URL: p.URLFor(t)}
			r.Node, r.Err = p.fetch(ctx, t, r.URL)
			out[i] = r
		}()
	}
	wg.Wait()
	return out
}

// errRedirect: a node's gpumemd never redirects, and following one would let a node
// point the controller at any address.
var errRedirect = errors.New("redirected; gpumemd answers /inventory itself")

// client is the client that asks node: one per node, so its TLS checks that node's name.
func (p Puller) client(node string) *http.Client {
	if p.Client != nil {
		return p.Client
	}
	tr := &http.Transport{DisableKeepAlives: true, // no proxy: the nodes are the cluster's own
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, MaxResponseHeaderBytes: 64 << 10}
	if p.TLS != nil {
		tr.TLSClientConfig = p.TLS.Clone()
		tr.TLSClientConfig.ServerName = node
		tr.TLSClientConfig.MinVersion = max(tr.TLSClientConfig.MinVersion, tls.VersionTLS12)
	}
	return &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
}

// fetch gets t's inventory from url.
func (p Puller) fetch(ctx context.Context, t Target, url string) (inventory.Node, error) {
	node := t.Node
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return inventory.Node{}, err
	}
	resp, err := p.client(node).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return inventory.Node{}, fmt.Errorf("no answer within %s (is gpumemd running there, listening beyond loopback?)", timeout)
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			// gpumemd's default Listen is loopback: the usual cause on a new cluster.
			return inventory.Node{}, fmt.Errorf("%w (nothing listens there: gpumemd listens on loopback unless its Listen says otherwise, e.g. Listen = :9402)", err)
		}
		return inventory.Node{}, err
	}
	defer resp.Body.Close()
	const limit = inventory.MaxNodeFileBytes
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return inventory.Node{}, fmt.Errorf("answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if resp.ContentLength > limit {
		return inventory.Node{}, fmt.Errorf("answered %d bytes, more than the %d an inventory may have", resp.ContentLength, limit)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return inventory.Node{}, fmt.Errorf("answer not complete within %s", timeout)
		}
		return inventory.Node{}, fmt.Errorf("reading the answer: %w", err)
	}
	if len(b) > limit {
		return inventory.Node{}, fmt.Errorf("answered more than the %d bytes an inventory may have", limit)
	}
	c, err := inventory.Decode(b)
	if err != nil {
		return inventory.Node{}, err
	}
	if len(c.Nodes) != 1 || c.Nodes[0].Name != node {
		names := make([]string, len(c.Nodes))
		for i, n := range c.Nodes {
			names[i] = n.Name
		}
		return inventory.Node{}, fmt.Errorf("answered the inventory of %q, not of %s alone (is its gpumemd started with --node %s?)", names, node, node)
	}
	n := c.Nodes[0]
	if err := n.CheckHardware(t.CPUs); err != nil {
		return inventory.Node{}, err
	}
	return inventory.Node{Name: n.Name, GPUs: n.GPUs}, nil
}
