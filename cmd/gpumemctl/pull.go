package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/gresconf"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/invpull"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

// pullFlags are the settings of `gpumemctl inventory pull`.
type pullFlags struct {
	conf, slurmConf, dir      string
	nodes, template, lines    string
	gresConf, devPrefix, rel  string
	url, hook                 string
	caFile, certFile, keyFile string
	timeout, every            time.Duration
}

func newInventoryPullCmd() *cobra.Command {
	var f pullFlags
	cmd := &cobra.Command{
		Use:         "pull",
		Annotations: manExitStatus(nodesExitStatus),
		Short:       "Fetch each GPU node's inventory from its gpumemd into InventoryPath (configless Slurm)",
		Long: `Fetch each GPU node's inventory from its gpumemd (GET /inventory) into the
plugins' InventoryPath, for a controller that does not share /etc/slurm with the nodes
(configless Slurm). A node that does not answer, or answers anything but its own valid
inventory, is reported and keeps its last good file; no file is ever deleted.

With --node-template and --node-lines it also writes the NodeName lines of the GPU
nodes, with their Gres=, for slurm.conf to Include (Slurm ships an Included file to
slurmd and the clients); with --gres-conf, the cluster's gres.conf, checked with
slurmd -G first. --hook runs when either changed. --every repeats the pull.

Exit status: 0 every node pulled, 1 some node could not be pulled (the others were),
2 nothing could be done.

Over plain HTTP nothing proves an answer comes from the node's gpumemd: any local
user on a GPU node who binds port 9402 before gpumemd can answer for it, and pull says
so on every run. With --ca-file (gpumemd serving TLS through its web config) each node
must show a certificate signed by that CA that names its Slurm NodeName; --cert-file
and --key-file add a client certificate for a gpumemd that asks for one
(docs/install.md, "Pulling over TLS").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.every <= 0 {
				return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), true)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			for {
				if err := f.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), false); err != nil {
					var st exitStatus
					if !errors.As(err, &st) || st.err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "gpumemctl inventory pull:", err)
					}
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(f.every):
				}
			}
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.conf, "config", confDefault(), "gpumem.conf: InventoryPath, SlurmConf, ShardUnit and ShardTypes come from it")
	fs.StringVar(&f.slurmConf, "slurm-conf", "", "the controller's slurm.conf, for the nodes, their addresses and partitions (default: gpumem.conf's SlurmConf)")
	fs.StringVar(&f.dir, "inventory-dir", "", "where the node files go (default: gpumem.conf's InventoryPath, which must be a directory)")
	fs.StringVar(&f.nodes, "nodes", "", "nodes to pull, a Slurm hostlist such as gpu[01-16] (default: every node of --node-template, else every node whose slurm.conf Gres= has gpu)")
	fs.StringVar(&f.template, "node-template", "", "the GPU nodes' NodeName lines without gpumem's Gres= (the admin's); names the nodes and their NodeAddr")
	fs.StringVar(&f.lines, "node-lines", "", "write --node-template's lines with each node's Gres= here, for slurm.conf to Include (a name beside slurm.conf, so Slurm ships it)")
	fs.StringVar(&f.gresConf, "gres-conf", "", "also write the cluster's gres.conf here (beside slurm.conf, so Slurm ships it to slurmd)")
	fs.StringVar(&f.devPrefix, "dev-prefix", "/dev", "directory holding the nvidia device files named in gres.conf File=")
	fs.StringVar(&f.rel, "slurm-version", "auto", "Slurm release gres.conf is for (22.05.8, 24.11, ...); auto asks slurmd -V")
	fs.StringVar(&f.url, "url", invpull.DefaultURL, "each node's inventory URL: {addr} is its NodeAddr (else NodeHostname, else name), {node} its name (with --ca-file the default is "+invpull.DefaultTLSURL+")")
	fs.StringVar(&f.caFile, "ca-file", "", "the site's CA certificate (PEM): pull over TLS, and take an answer only from a node whose certificate it signed for the node's name")
	fs.StringVar(&f.certFile, "cert-file", "", "client certificate (PEM) shown to the nodes, with --key-file (for a gpumemd whose web config asks for one)")
	fs.StringVar(&f.keyFile, "key-file", "", "the client certificate's private key (PEM)")
	cliflag.DurationVar(fs, &f.timeout, "timeout", 10*time.Second, "how long one node may take to answer")
	fs.StringVar(&f.hook, "hook", "", "shell command run when the node lines or gres.conf changed, e.g. 'scontrol reconfigure'")
	cliflag.DurationVar(fs, &f.every, "every", 0, "pull again this often until stopped (0: once)")
	return cmd
}

// run pulls once. verbose reports unchanged files too (a one-shot run); --every
// reports only what changed, so its log says what happened and not that nothing did.
func (f pullFlags) run(ctx context.Context, out, errOut io.Writer, verbose bool) error {
	if f.caFile != "" && f.url == invpull.DefaultURL {
		f.url = invpull.DefaultTLSURL
	}
	if err := invpull.CheckURL(f.url); err != nil {
		return trouble(fmt.Errorf("--url: %w", err))
	}
	tlsConf, err := f.tlsConfig()
	if err != nil {
		return trouble(err)
	}
	if tlsConf == nil {
		fmt.Fprintln(errOut, "WARNING: pulling over plain HTTP: nothing proves an answer comes from the node's gpumemd; any local user on a GPU node who binds its port first can answer for it. Serve TLS from gpumemd and pass --ca-file (docs/install.md, \"Pulling over TLS\").")
	}
	conf, err := config.Load(f.conf)
	if err != nil {
		return trouble(fmt.Errorf("--config %s: %w", f.conf, err))
	}
	if f.slurmConf == "" {
		f.slurmConf = conf.SlurmConf
	}
	if f.dir == "" {
		f.dir = conf.InventoryPath
	}
	if (f.template == "") != (f.lines == "") {
		return trouble(fmt.Errorf("--node-template and --node-lines go together: the lines are the template's, completed"))
	}
	if fi, err := os.Stat(f.dir); err == nil && !fi.IsDir() {
		return trouble(fmt.Errorf("inventory %s is one file; pull writes one file per node: point InventoryPath (or --inventory-dir) at a directory", f.dir))
	}
	targets, err := f.targets()
	if err != nil {
		return trouble(err)
	}
	if len(targets) == 0 {
		return trouble(fmt.Errorf("no GPU nodes to pull: give --nodes, or --node-template with their NodeName lines"))
	}
	p := invpull.Puller{URL: f.url, Timeout: f.timeout, TLS: tlsConf}
	var pulled inventory.Cluster
	failed := 0
	for _, r := range p.Pull(ctx, targets) {
		if r.Err != nil {
			failed++
			fmt.Fprintf(errOut, "node %s (%s): %v; its last inventory is kept\n", r.Target.Node, r.URL, r.Err)
			continue
		}
		pulled.Nodes = append(pulled.Nodes, r.Node)
	}
	if len(pulled.Nodes) == 0 {
		// Nothing new: the files are as good as they were. Without any (a first run),
		// writing would only install an empty gres.conf.
		if have, _, err := new(inventory.Reader).Read(f.dir); err != nil || len(have.Nodes) == 0 {
			return exitStatus{1, fmt.Errorf("no node answered and %s holds no inventory yet: nothing written", f.dir)}
		}
	}
	rel, err := gresconf.ResolveRelease(f.rel)
	if err != nil {
		return trouble(err)
	}
	opt := gresconf.Options{ShardUnitMiB: conf.ShardUnitMiB, ShardTypes: conf.ShardTypes == config.ShardTypesPerGPU,
		DevPrefix: f.devPrefix, Slurm: rel}
	linesChanged := false
	if f.lines != "" {
		if linesChanged, err = f.writeLines(pulled, opt, errOut); err != nil {
			return trouble(err)
		}
		if linesChanged || verbose {
			report(out, f.lines, linesChanged)
		}
	}
	// Partitions come from the controller's slurm.conf, the one slurmctld reads, so the
	// files written here do not change with what a node's cached copy says.
	sc, err := slurmconf.ParseFile(f.slurmConf)
	switch {
	case err == nil:
		sc.Annotate(&pulled)
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(errOut, "warning: %s: %v; the inventory is written without partitions\n", f.slurmConf, err)
	default:
		return trouble(fmt.Errorf("slurm.conf %s: %w", f.slurmConf, err))
	}
	in := gresconf.Input{Cluster: pulled, InventoryDir: f.dir, Merge: true}
	if f.gresConf != "" {
		in.Out, in.Options = f.gresConf, &opt
		if sc != nil {
			in.Check = gresconf.Check{SlurmConf: f.slurmConf}
		}
	}
	res, err := gresconf.Build(in)
	reportBuild(out, errOut, res, f.gresConf, verbose, "warning: slurmd not installed here: gres.conf not validated")
	if err != nil {
		return trouble(err)
	}
	if f.hook != "" && (linesChanged || res.Changed) {
		h := slurmcli.Hook{Name: "--hook", Command: f.hook, Timeout: slurmcli.HookTimeout, Output: errOut}
		if err := h.Run(ctx); err != nil {
			return trouble(err)
		}
	}
	if failed > 0 {
		return exitStatus{code: 1}
	}
	return nil
}

// targets are the nodes to pull and their addresses.
func (f pullFlags) targets() ([]invpull.Target, error) {
	var src *slurmconf.Conf
	var err error
	if f.template != "" {
		var b []byte
		if b, err = slurmconf.Read(f.template); err == nil {
			src, err = slurmconf.Parse(string(b))
		}
		if err != nil {
			return nil, fmt.Errorf("--node-template: %w", err)
		}
	} else if src, err = slurmconf.ParseFile(f.slurmConf); err != nil && f.nodes == "" {
		return nil, fmt.Errorf("slurm.conf %s: %w; name the nodes with --nodes", f.slurmConf, err)
	}
	var names []string
	switch {
	case f.nodes != "":
		if names, err = slurmconf.ExpandHostlist(f.nodes); err != nil {
			return nil, fmt.Errorf("--nodes: %w", err)
		}
	case f.template != "":
		for _, n := range src.Nodes {
			names = append(names, n.Name)
		}
	default:
		for _, n := range src.Nodes {
			if strings.Contains(n.Get("gres"), "gpu") {
				names = append(names, n.Name)
			}
		}
	}
	out := make([]invpull.Target, 0, len(names))
	for _, name := range names {
		if err := inventory.CheckNodeName(name); err != nil {
			return nil, err
		}
		t := invpull.Target{Node: name, Addr: name}
		if src != nil {
			if n, ok := src.Node(name); ok {
				for _, k := range []string{"nodehostname", "nodeaddr"} { // NodeAddr wins, as in Slurm
					if v := n.Get(k); v != "" {
						t.Addr = v
					}
				}
				t.CPUs, _ = strconv.Atoi(n.Get("cpus")) // bounds the cores a node may name
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// tlsConfig is the TLS the nodes are asked over: nil for plain HTTP, which --ca-file
// refuses (a CA that checks nothing would be a false assurance).
func (f pullFlags) tlsConfig() (*tls.Config, error) {
	https := strings.HasPrefix(f.url, "https://")
	switch {
	case f.caFile == "" && https:
		return nil, fmt.Errorf("--url %s is https: give --ca-file, the CA that signed the nodes' certificates", f.url)
	case f.caFile == "":
		if f.certFile != "" || f.keyFile != "" {
			return nil, fmt.Errorf("--cert-file and --key-file are for TLS: give --ca-file too")
		}
		return nil, nil
	case !https:
		return nil, fmt.Errorf("--ca-file with --url %s: the URL must be https:// for the CA to check anything", f.url)
	}
	pem, err := atomicfile.ReadCapped(f.caFile, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", f.caFile)
	}
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if (f.certFile == "") != (f.keyFile == "") {
		return nil, fmt.Errorf("--cert-file and --key-file go together")
	}
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert-file/--key-file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// writeLines writes --node-template's lines with the Gres= of every node with an
// inventory: those just pulled, and for the others their last good file.
func (f pullFlags) writeLines(pulled inventory.Cluster, opt gresconf.Options, errOut io.Writer) (bool, error) {
	have, skipped, err := new(inventory.Reader).Read(f.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	for _, s := range skipped {
		fmt.Fprintf(errOut, "warning: %v\n", s)
	}
	byName := map[string]inventory.Node{}
	for _, n := range append(have.Nodes, pulled.Nodes...) {
		byName[n.Name] = n
	}
	gres := map[string]string{}
	for name, n := range byName {
		g, err := gresconf.NodeGres(n, opt)
		if err != nil {
			return false, fmt.Errorf("node %s: %w", name, err)
		}
		gres[name] = g
	}
	tmpl, err := slurmconf.Read(f.template)
	if err != nil {
		return false, err
	}
	body, missing, err := slurmconf.WithGres(string(tmpl), gres)
	if err != nil {
		return false, fmt.Errorf("--node-template %s: %w", f.template, err)
	}
	if len(missing) > 0 {
		fmt.Fprintf(errOut, "warning: %s has no NodeName line for %v, which have an inventory: add them, or remove their files from %s\n", f.template, missing, f.dir)
	}
	data := []byte("# Written by gpumemctl inventory pull from " + f.template + " and the GPU inventory in " + f.dir +
		".\n# Do not edit: edit the template; every pull rewrites this file.\n" + body)
	return atomicfile.Install(f.lines, data, func(b []byte) error {
		_, err := slurmconf.Parse(string(b))
		return err
	})
}
