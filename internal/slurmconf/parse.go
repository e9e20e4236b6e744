// Package slurmconf reads the parts of slurm.conf gpumem needs: node and partition
// lines (host lists expanded), the default partition, GresTypes and each node's Gres=.
package slurmconf

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

// Conf is what gpumem knows of a slurm.conf.
type Conf struct {
	Nodes      []Node
	Partitions []Partition
	GresTypes  []string
	// Params holds the other single-valued settings, keyed in lower case.
	Params map[string]string
}

// Node is one node, expanded from a NodeName line (with NodeName=DEFAULT applied).
type Node struct {
	Name   string
	Params map[string]string // keys in lower case: "cpus", "realmemory", "gres", ...
}

// Partition is one PartitionName line.
type Partition struct {
	Name    string
	Nodes   []string // expanded; ALL means every node
	Default bool
	Params  map[string]string
}

// Get returns a node parameter by case-insensitive key.
func (n Node) Get(key string) string { return n.Params[strings.ToLower(key)] }

// maxIncludeDepth stops an Include loop.
const maxIncludeDepth = 8

// MaxBytes bounds what one ParseFile reads, slurm.conf and every file it includes
// together, and maxFiles how many files: the largest clusters' slurm.conf is a few
// megabytes, and the plugins read it inside slurmctld, which must never block on a FIFO
// or fill its memory with a runaway file.
const (
	MaxBytes = 16 << 20
	maxFiles = 1000
)

// Read reads one Slurm configuration file (slurm.conf, gres.conf, a file beside them)
// whole, as ParseFile reads each of its files: a regular file of at most MaxBytes.
func Read(path string) ([]byte, error) { return atomicfile.ReadCapped(path, MaxBytes) }

// ParseFile reads slurm.conf at path, following Include lines (relative to its folder).
// Only regular files are read (a FIFO or a device is refused at once), MaxBytes of them
// in all.
func ParseFile(path string) (*Conf, error) {
	p := &parser{conf: newConf(), dir: filepath.Dir(path)}
	budget, files := int64(MaxBytes), 0
	p.open = func(name string) ([]byte, error) {
		if files++; files > maxFiles {
			return nil, fmt.Errorf("%s: slurm.conf and its Includes are more than %d files", name, maxFiles)
		}
		b, err := atomicfile.ReadCapped(name, budget)
		if err != nil {
			if name != path {
				return nil, fmt.Errorf("%w (slurm.conf and its Includes may hold %d bytes in all)", err, MaxBytes)
			}
			return nil, err
		}
		budget -= int64(len(b))
		return b, nil
	}
	b, err := p.open(path)
	if err != nil {
		return nil, err
	}
	if err := p.parse(path, string(b), 0); err != nil {
		return nil, err
	}
	return p.finish()
}

// Parse reads slurm.conf text; an Include line is an error since there is no folder to
// resolve it against.
func Parse(text string) (*Conf, error) {
	p := &parser{conf: newConf()}
	if err := p.parse("slurm.conf", text, 0); err != nil {
		return nil, err
	}
	return p.finish()
}

func newConf() *Conf { return &Conf{Params: map[string]string{}} }

type parser struct {
	conf        *Conf
	open        func(string) ([]byte, error)
	dir         string
	nodeDefault map[string]string
	partDefault map[string]string
	allParts    []int // partitions with Nodes=ALL, resolved once every node is known
}

func (p *parser) parse(name, text string, depth int) error {
	for _, ln := range logicalLines(text) {
		fields, err := tokens(ln.text)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, ln.no, err)
		}
		if len(fields) == 0 {
			continue
		}
		if err := p.line(fields, depth); err != nil {
			return fmt.Errorf("%s:%d: %w", name, ln.no, err)
		}
	}
	return nil
}

func (p *parser) line(fields []string, depth int) error {
	if strings.EqualFold(fields[0], "include") {
		return p.include(fields, depth)
	}
	kv, err := pairs(fields)
	if err != nil {
		return err
	}
	key, val := kv[0].key, kv[0].val
	switch key {
	case "nodename":
		return p.node(val, kv)
	case "partitionname":
		return p.partition(val, kv)
	}
	for _, e := range kv {
		if e.key == "grestypes" {
			p.conf.GresTypes = splitList(e.val)
		}
		p.conf.Params[e.key] = e.val
	}
	return nil
}

func (p *parser) include(fields []string, depth int) error {
	if len(fields) != 2 {
		return fmt.Errorf("Include takes one file, got %d words", len(fields)-1)
	}
	if p.open == nil {
		return fmt.Errorf("Include %s: slurm.conf was not read from a file", fields[1])
	}
	if depth >= maxIncludeDepth {
		return fmt.Errorf("Include %s: more than %d levels deep", fields[1], maxIncludeDepth)
	}
	path := fields[1]
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	b, err := p.open(path)
	if err != nil {
		return err
	}
	return p.parse(path, string(b), depth+1)
}

// merged applies a DEFAULT line's settings under this line's own; a DEFAULT line
// itself replaces the defaults and yields nothing (ok false).
func merged(defaults *map[string]string, name string, kv []kvPair) (map[string]string, bool) {
	isDefault := strings.EqualFold(name, "DEFAULT")
	params := map[string]string{}
	if !isDefault {
		for k, v := range *defaults {
			params[k] = v
		}
	}
	for _, e := range kv[1:] {
		params[e.key] = e.val
	}
	if isDefault {
		*defaults = params
	}
	return params, !isDefault
}

func (p *parser) node(names string, kv []kvPair) error {
	params, ok := merged(&p.nodeDefault, names, kv)
	if !ok {
		return nil
	}
	hosts, err := ExpandHostlist(names)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		cp := make(map[string]string, len(params))
		for k, v := range params {
			cp[k] = v
		}
		p.conf.Nodes = append(p.conf.Nodes, Node{Name: h, Params: cp})
	}
	return nil
}

func (p *parser) partition(name string, kv []kvPair) error {
	params, ok := merged(&p.partDefault, name, kv)
	if !ok {
		return nil
	}
	part := Partition{Name: name, Params: params, Default: strings.EqualFold(params["default"], "yes")}
	if nodes := params["nodes"]; strings.EqualFold(nodes, "ALL") {
		p.allParts = append(p.allParts, len(p.conf.Partitions))
	} else if nodes != "" {
		hosts, err := ExpandHostlist(nodes)
		if err != nil {
			return err
		}
		part.Nodes = hosts
	}
	p.conf.Partitions = append(p.conf.Partitions, part)
	return nil
}

func (p *parser) finish() (*Conf, error) {
	for _, i := range p.allParts {
		for _, n := range p.conf.Nodes {
			p.conf.Partitions[i].Nodes = append(p.conf.Partitions[i].Nodes, n.Name)
		}
	}
	seen := map[string]bool{}
	for _, n := range p.conf.Nodes {
		if seen[n.Name] {
			return nil, fmt.Errorf("slurm.conf: node %s defined twice", n.Name)
		}
		seen[n.Name] = true
	}
	return p.conf, nil
}

// DefaultPartition is the partition marked Default=YES; Slurm takes the last one so
// marked, and with none a job must name its partition ("" here).
func (c *Conf) DefaultPartition() string {
	name := ""
	for _, p := range c.Partitions {
		if p.Default {
			name = p.Name
		}
	}
	return name
}

// PartitionsOf lists the partitions that hold node, in file order.
func (c *Conf) PartitionsOf(node string) []string {
	var out []string
	for _, p := range c.Partitions {
		for _, n := range p.Nodes {
			if n == node {
				out = append(out, p.Name)
				break
			}
		}
	}
	return out
}

// Node finds a node by name.
func (c *Conf) Node(name string) (Node, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
