package trace

import (
	"fmt"
	"io"
)

// Node is one GPU node of the trace.
type Node struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	GPUs     int
	Model    string
}

// ReadNodes reads a node list (columns sn, cpu_milli, memory_mib, gpu, model).
func ReadNodes(name string, r io.Reader) ([]Node, error) {
	t, err := readTable(name, r, "sn", "cpu_milli", "memory_mib", "gpu", "model")
	if err != nil {
		return nil, err
	}
	out := make([]Node, 0, len(t.rows))
	seen := map[string]bool{}
	for i := range t.rows {
		v, err := t.ints(i, "cpu_milli", "memory_mib", "gpu")
		if err != nil {
			return nil, err
		}
		n := Node{Name: t.str(i, "sn"), CPUMilli: v[0], MemMiB: v[1], GPUs: int(v[2]), Model: t.str(i, "model")}
		if n.Name == "" {
			return nil, t.bad(i, "sn", "", "a node name")
		}
		if seen[n.Name] {
			return nil, t.bad(i, "sn", n.Name, "a name not used by an earlier node")
		}
		seen[n.Name] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	return out, nil
}

// TotalGPUs is the number of GPUs of the nodes.
func TotalGPUs(nodes []Node) int {
	total := 0
	for _, n := range nodes {
		total += n.GPUs
	}
	return total
}
