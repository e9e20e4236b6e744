package slurmcli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// NodeControl is how gpumem drains, resumes and reads its own node in Slurm: the health
// monitor and a MIG layout change both go through it (slurmcli.ScontrolNode in production).
type NodeControl interface {
	Drain(node, reason string) error
	Resume(node string) error
	// Node reads the node's state and reason as Slurm has them now.
	Node(node string) (Node, error)
}

// Node is what gpumem reads of one node from `scontrol -o show node`. Every field of a
// node is the admin's or Slurm's; none is a user's.
type Node struct {
	Name   string
	Weight uint32
	// State is Slurm's state with its flags, e.g. IDLE+DRAIN, MIXED, DOWN*+DRAIN.
	State string
	// Reason is the drain or down reason without Slurm's " [user@time]" suffix; "" when
	// there is none.
	Reason string
	// Gres is the node's configured GRES as slurmctld has it now (slurm.conf's Gres=
	// once slurmctld took it), e.g. gpu:3g.20gb:2; "" for none.
	Gres string
}

// SameGres reports whether two Gres= values name the same GRES counts, in any order,
// ignoring Slurm's socket suffixes such as "(S:0)".
func SameGres(a, b string) bool {
	norm := func(s string) []string {
		var out []string
		for _, f := range slurmgres.Split(s) {
			if i := strings.IndexByte(f, '('); i >= 0 {
				f = f[:i]
			}
			if f = slurmgres.Strip(strings.TrimSpace(f)); f != "" && f != "(null)" {
				out = append(out, f)
			}
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// Flag reports whether the state carries flag (DRAIN, DOWN, MAINT, REBOOT_REQUESTED, ...),
// as its base state or one of its +flags.
func (n Node) Flag(flag string) bool {
	for _, f := range strings.FieldsFunc(n.State, func(r rune) bool { return r == '+' }) {
		if strings.TrimRight(f, "*~#!%$@^-") == flag {
			return true
		}
	}
	return false
}

var (
	nodeNameRe  = regexp.MustCompile(`(?:^|\s)NodeName=(\S+)`)
	weightRe    = regexp.MustCompile(`\sWeight=(\d+)`)
	nodeStateRe = regexp.MustCompile(`\sState=(\S+)`)
	nodeGresRe  = regexp.MustCompile(`\sGres=(\S*)`)
)

// ParseNodes reads `scontrol -o show node`: one node a line, each with its weight.
func ParseNodes(out string) ([]Node, error) {
	var nodes []Node
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		n, err := parseNode(line)
		w := weightRe.FindStringSubmatch(line)
		if err != nil || w == nil {
			return nil, fmt.Errorf("scontrol show node, line %d: no NodeName= or Weight= in %q; want the one-line output of `scontrol -o show node`", i+1, clip(line))
		}
		weight, err := strconv.ParseUint(w[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("scontrol show node, node %s: weight %q: %v", n.Name, w[1], err)
		}
		n.Weight = uint32(weight)
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// ParseNode finds node name in `scontrol -o show node NAME` and reads its state and
// reason.
func ParseNode(out, name string) (Node, error) {
	for _, line := range strings.Split(out, "\n") {
		if n, err := parseNode(line); err == nil && n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("scontrol show node %s: no NodeName=%s in %q", name, name, clip(out))
}

func parseNode(line string) (Node, error) {
	name := nodeNameRe.FindStringSubmatch(line)
	if name == nil {
		return Node{}, fmt.Errorf("no NodeName=")
	}
	n := Node{Name: name[1]}
	if st := nodeStateRe.FindStringSubmatch(line); st != nil {
		n.State = st[1]
	}
	if g := nodeGresRe.FindStringSubmatch(line); g != nil && g[1] != "(null)" {
		n.Gres = g[1]
	}
	if _, reason, ok := strings.Cut(strings.TrimSpace(line), " Reason="); ok {
		// Slurm appends " [user@time]" to the reason.
		if i := strings.LastIndex(reason, " ["); i >= 0 {
			reason = reason[:i]
		}
		n.Reason = reason
	}
	return n, nil
}

// NodeGres is what a user may read of a node's GPUs from `scontrol -o -d show node`:
// its state and partitions, its configured GRES, what of them is allocated, and its
// allocated TRES. Every field is the admin's or Slurm's.
type NodeGres struct {
	Name, State    string
	Partitions     []string
	Gres, GresUsed string
	AllocTRES      string
}

var (
	nodePartsRe    = regexp.MustCompile(`\sPartitions=(\S*)`)
	nodeGresUsedRe = regexp.MustCompile(`\sGresUsed=(\S*)`)
	nodeAllocRe    = regexp.MustCompile(`\sAllocTRES=(\S*)`)
)

// ReadNodeGres reads every node the caller may see.
func ReadNodeGres(ctx context.Context, scontrol Runner) ([]NodeGres, error) {
	out, err := scontrol.Run(ctx, "-o", "-d", "show", "node")
	if err != nil {
		return nil, err
	}
	return ParseNodeGres(out), nil
}

// ParseNodeGres reads `scontrol -o -d show node`, one node a line.
func ParseNodeGres(out string) []NodeGres {
	var nodes []NodeGres
	for _, line := range strings.Split(out, "\n") {
		n, err := parseNode(line)
		if err != nil {
			continue
		}
		g := NodeGres{Name: n.Name, State: n.State, Gres: n.Gres}
		if m := nodePartsRe.FindStringSubmatch(line); m != nil && m[1] != "" && m[1] != "(null)" {
			g.Partitions = strings.Split(m[1], ",")
		}
		if m := nodeGresUsedRe.FindStringSubmatch(line); m != nil {
			g.GresUsed = m[1]
		}
		if m := nodeAllocRe.FindStringSubmatch(line); m != nil {
			g.AllocTRES = m[1]
		}
		nodes = append(nodes, g)
	}
	return nodes
}
