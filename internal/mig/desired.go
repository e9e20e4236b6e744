package mig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/versioned"
)

// DesiredVersion is the version of the desired-layout file; a reader refuses others.
var DesiredVersion = versioned.MIGDesired.Current

// Desired is one node's declared MIG layout: the file `gpumemctl mig plan` writes, an
// admin may review and edit, and gpumemd applies on its node. It is kept apart from the
// code that applies it, so what a node should look like is readable without running
// anything.
type Desired struct {
	Version     int          `json:"version"`
	Node        string       `json:"node"`
	Explanation []string     `json:"explanation,omitempty"` // why, as planned; not read back
	GPUs        []DesiredGPU `json:"gpus"`
}

// DesiredGPU is one GPU's layout. A GPU the file does not list is left as it is.
type DesiredGPU struct {
	Index  int    `json:"index"`
	Model  string `json:"model"`  // catalog key
	Layout string `json:"layout"` // PROFILE@START,... as ParseLayout reads it; "" empties the GPU
}

// DesiredFiles groups a plan's desired layouts per node, every planned GPU listed,
// nodes in name order; each file carries the plan's explanation lines for its node and
// the cluster summary.
func (p ClusterPlan) DesiredFiles() []Desired {
	byNode := map[string]*Desired{}
	var nodes []string
	for _, g := range p.Desired {
		d := byNode[g.Node]
		if d == nil {
			d = &Desired{Version: DesiredVersion, Node: g.Node}
			byNode[g.Node] = d
			nodes = append(nodes, g.Node)
		}
		d.GPUs = append(d.GPUs, DesiredGPU{Index: g.Index, Model: g.Model, Layout: g.Layout.String()})
	}
	sort.Strings(nodes)
	expl := p.Explain()
	out := make([]Desired, len(nodes))
	for i, n := range nodes {
		d := byNode[n]
		for _, line := range expl {
			if strings.HasPrefix(line, n+" gpu[") || !isNodeLine(line, byNode) {
				d.Explanation = append(d.Explanation, line) // this node's changes and the cluster summary
			}
		}
		out[i] = *d
	}
	return out
}

func isNodeLine(line string, nodes map[string]*Desired) bool {
	for n := range nodes {
		if strings.HasPrefix(line, n+" gpu[") {
			return true
		}
	}
	return false
}

// Encode writes d as indented JSON, one GPU a line block, for review and diff.
func (d Desired) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	return append(b, '\n'), err
}

// Layouts checks d and returns its layouts per GPU index: the version, a node name,
// each GPU once, each model in the catalog and each layout valid for it.
func (d Desired) Layouts() (map[int]Layout, map[int]Model, error) {
	if d.Version != DesiredVersion {
		return nil, nil, fmt.Errorf("mig: desired layout version %d; this gpumem reads version %d", d.Version, DesiredVersion)
	}
	if d.Node == "" {
		return nil, nil, fmt.Errorf("mig: desired layout names no node")
	}
	out, models := map[int]Layout{}, map[int]Model{}
	for _, g := range d.GPUs {
		if _, dup := out[g.Index]; dup {
			return nil, nil, fmt.Errorf("mig: desired layout of %s lists GPU %d twice", d.Node, g.Index)
		}
		if g.Index < 0 {
			return nil, nil, fmt.Errorf("mig: desired layout of %s: GPU index %d: want 0 or more", d.Node, g.Index)
		}
		m, err := Lookup(g.Model)
		if err != nil {
			return nil, nil, fmt.Errorf("mig: desired layout of %s GPU %d: %w", d.Node, g.Index, err)
		}
		l, err := ParseLayout(g.Layout)
		if err != nil {
			return nil, nil, fmt.Errorf("mig: desired layout of %s GPU %d: %w", d.Node, g.Index, err)
		}
		if err := m.Validate(l); err != nil {
			return nil, nil, fmt.Errorf("mig: desired layout of %s GPU %d: %w", d.Node, g.Index, err)
		}
		out[g.Index], models[g.Index] = l, m
	}
	return out, models, nil
}

// DecodeDesired reads a desired-layout file and checks it (Layouts).
func DecodeDesired(b []byte) (Desired, error) {
	var d Desired
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Desired{}, fmt.Errorf("mig: desired layout file: %w", err)
	}
	if _, _, err := d.Layouts(); err != nil {
		return Desired{}, err
	}
	return d, nil
}

// NodeLayouts reads node's desired-layout file (DecodeDesired) and returns its layouts
// per GPU index. The file must name node: one copied under another node's name would
// repartition the wrong GPUs.
func NodeLayouts(b []byte, node string) (map[int]Layout, error) {
	d, err := DecodeDesired(b)
	if err != nil {
		return nil, err
	}
	if d.Node != node {
		return nil, errors.New("desired layout file " + node + ".json names node " + d.Node)
	}
	want, _, err := d.Layouts()
	return want, err
}
