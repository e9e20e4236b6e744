package trace

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Failed is the node a reference decision names when the task could not be placed.
const Failed = "FAILED"

// Decision is what one reference policy did with one arriving task.
type Decision struct {
	Node      string // "" when the task failed
	GPUs      []int  // GPU indices taken, when the file records them
	UsedAfter int64  // cluster's allocated milli-GPU after the decision
	Arrived   int64  // milli-GPU arrived so far, this task included
}

// Sequence is a reference run: tasks in arrival order and, for each policy the file
// records, its decision on each task.
type Sequence struct {
	Pods      []Pod
	Policies  []string // as the file names them, e.g. "06-FGD"
	Decisions map[string][]Decision
}

// ReadSequence reads a reference arrival sequence: columns seq, pod, cpu_milli,
// memory_mib, num_gpu, gpu_milli, gpu_spec, then for each policy P the columns P_node,
// P_gpu_index, P_used_gpu_milli_after, P_arrived_gpu_milli.
func ReadSequence(name string, r io.Reader) (*Sequence, error) {
	t, err := readTable(name, r, "seq", "pod", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec")
	if err != nil {
		return nil, err
	}
	s := &Sequence{Decisions: map[string][]Decision{}}
	for col := range t.col {
		if p, ok := strings.CutSuffix(col, "_node"); ok {
			s.Policies = append(s.Policies, p)
		}
	}
	sort.Strings(s.Policies)
	if len(s.Policies) == 0 {
		return nil, fmt.Errorf("%s: no POLICY_node column, want at least one policy's decisions", name)
	}
	for _, p := range s.Policies {
		for _, suf := range []string{"_gpu_index", "_used_gpu_milli_after", "_arrived_gpu_milli"} {
			if _, ok := t.col[p+suf]; !ok {
				return nil, fmt.Errorf("%s: policy %s has no column %s", name, p, p+suf)
			}
		}
	}
	for i := range t.rows {
		if seq, err := t.int(i, "seq"); err != nil || seq != int64(i) {
			return nil, t.bad(i, "seq", t.str(i, "seq"), strconv.Itoa(i)+" (rows in arrival order)")
		}
		pod, err := podAt(t, i, "pod")
		if err != nil {
			return nil, err
		}
		s.Pods = append(s.Pods, pod)
		for _, p := range s.Policies {
			d, err := decisionAt(t, i, p)
			if err != nil {
				return nil, err
			}
			s.Decisions[p] = append(s.Decisions[p], d)
		}
	}
	return s, nil
}

func decisionAt(t *table, i int, p string) (Decision, error) {
	v, err := t.ints(i, p+"_used_gpu_milli_after", p+"_arrived_gpu_milli")
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Node: t.str(i, p+"_node"), UsedAfter: v[0], Arrived: v[1]}
	if d.Node == Failed {
		d.Node = ""
	}
	if g := t.str(i, p+"_gpu_index"); g != "" {
		// Several GPUs are written joined by '-', e.g. 0-1-2-3.
		for _, f := range strings.Split(g, "-") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 {
				return Decision{}, t.bad(i, p+"_gpu_index", g, "GPU indices joined by '-', or nothing")
			}
			d.GPUs = append(d.GPUs, n)
		}
	}
	return d, nil
}
