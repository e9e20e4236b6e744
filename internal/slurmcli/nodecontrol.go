package slurmcli

import (
	"context"
)

// ScontrolNode drains and resumes nodes with Slurm's own command, so gpumemd needs no
// Slurm library and every change shows in slurmctld's log as an ordinary update.
type ScontrolNode struct {
	Run Runner // its Timeout bounds each call, so a hung slurmctld never stalls polling for long
}

// Drain sets the node to DRAIN with the reason.
func (s ScontrolNode) Drain(node, reason string) error {
	_, err := s.Run.Run(context.Background(), "update", "nodename="+node, "state=drain", "reason="+reason)
	return err
}

// Resume returns the node to service.
func (s ScontrolNode) Resume(node string) error {
	_, err := s.Run.Run(context.Background(), "update", "nodename="+node, "state=resume")
	return err
}

// Node reads the node's state and reason from `scontrol show node NODE -o`.
func (s ScontrolNode) Node(node string) (Node, error) {
	out, err := s.Run.Run(context.Background(), "show", "node", node, "-o")
	if err != nil {
		return Node{}, err
	}
	return ParseNode(out, node)
}

// Nodes reads every node, with its weight, from `scontrol -o show node`.
func (s ScontrolNode) Nodes(ctx context.Context) ([]Node, error) {
	out, err := s.Run.Run(ctx, "-o", "show", "node")
	if err != nil {
		return nil, err
	}
	return ParseNodes(out)
}

// Reason returns the node's drain reason ("" when it has none).
func (s ScontrolNode) Reason(node string) (string, error) {
	n, err := s.Node(node)
	return n.Reason, err
}
