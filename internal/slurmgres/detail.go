package slurmgres

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxGPUs bounds what one node's detail may expand to: a node has a handful of GPUs, so
// a longer list is a broken or hostile record, refused before it is built.
const MaxGPUs = 1 << 10

// Detail is a job's use of one GRES on one node, as `scontrol -d show job` prints it in
// the parentheses after the count (Item.Detail).
type Detail struct {
	// Indexed: the 22.05 form IDX:LIST, the GPUs by index (Index; none for "IDX:" or
	// "IDX:N/A", which 22.05 prints for a type the job took none of). Otherwise the form
	// of 24.11 and later, TAKEN/TOTAL for every GPU of the node in index order.
	Indexed bool
	Index   []int
	Taken   []int64
	Total   []int64
}

// ParseDetail reads a job's per-GPU detail, at most MaxGPUs GPUs of it.
func ParseDetail(s string) (Detail, error) {
	if list, ok := strings.CutPrefix(s, "IDX:"); ok {
		d := Detail{Indexed: true}
		if list == "N/A" || list == "" {
			return d, nil
		}
		var err error
		d.Index, err = ExpandIndex(list, MaxGPUs)
		return d, err
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxGPUs {
		return Detail{}, fmt.Errorf("more than %d GPUs", MaxGPUs)
	}
	d := Detail{Taken: make([]int64, len(parts)), Total: make([]int64, len(parts))}
	for i, part := range parts {
		took, total, ok := strings.Cut(part, "/")
		n, err := strconv.ParseInt(took, 10, 64)
		t, err2 := strconv.ParseInt(total, 10, 64)
		if !ok || err != nil || err2 != nil || n < 0 || t < 0 {
			return Detail{}, fmt.Errorf("per-GPU use %q; want TAKEN/TOTAL or IDX:LIST", part)
		}
		d.Taken[i], d.Total[i] = n, t
	}
	return d, nil
}

// String writes the detail back as Slurm prints it.
func (d Detail) String() string {
	if d.Indexed {
		return "IDX:" + FormatIndex(d.Index)
	}
	parts := make([]string, len(d.Taken))
	for i := range d.Taken {
		var total int64
		if i < len(d.Total) {
			total = d.Total[i]
		}
		parts[i] = strconv.FormatInt(d.Taken[i], 10) + "/" + strconv.FormatInt(total, 10)
	}
	return strings.Join(parts, ",")
}

// ExpandIndex expands an index list such as 0-1,3, at most max indices.
func ExpandIndex(list string, max int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(list, ",") {
		lo, hi, _ := strings.Cut(part, "-")
		if hi == "" {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a || a < 0 {
			return nil, fmt.Errorf("range %q; want N or N-M with 0 <= N <= M", part)
		}
		if b-a >= max-len(out) {
			return nil, fmt.Errorf("index list %q: more than %d GPUs", clip(list), max)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// FormatIndex writes indices as Slurm does, each run of consecutive ones as a range:
// 0,2-5.
func FormatIndex(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(idx[i])+"-"+strconv.Itoa(idx[j]))
		} else {
			parts = append(parts, strconv.Itoa(idx[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
