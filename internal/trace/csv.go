// Package trace reads the Alibaba GPU cluster trace (cluster-trace-gpu-v2023, published
// with Weng et al., "Beware of Fragmentation", USENIX ATC 2023): its nodes, its task
// lists, the reference arrival sequence and the published allocation curves.
package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// table is a CSV file read by column name, so that files whose columns move or grow
// still load, and a missing column is reported by name instead of misread by position.
type table struct {
	name string
	col  map[string]int
	rows [][]string
}

func readTable(name string, r io.Reader, need ...string) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: empty file, want a header line with %s", name, strings.Join(need, ","))
	}
	t := &table{name: name, col: map[string]int{}, rows: recs[1:]}
	for i, h := range recs[0] {
		t.col[strings.TrimSpace(h)] = i
	}
	for _, n := range need {
		if _, ok := t.col[n]; !ok {
			return nil, fmt.Errorf("%s: no column %q in header (want %s)", name, n, strings.Join(need, ","))
		}
	}
	return t, nil
}

// str returns a cell; a short row, or a column the file does not have, reads as empty.
func (t *table) str(row int, col string) string {
	r := t.rows[row]
	if i, ok := t.col[col]; ok && i < len(r) {
		return strings.TrimSpace(r[i])
	}
	return ""
}

// int reads a non-negative integer cell; an empty cell is zero.
func (t *table) int(row int, col string) (int64, error) {
	s := t.str(row, col)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, t.bad(row, col, s, "a non-negative integer")
	}
	return v, nil
}

func (t *table) float(row int, col string) (float64, error) {
	s := t.str(row, col)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, t.bad(row, col, s, "a number")
	}
	return v, nil
}

func (t *table) bad(row int, col, val, want string) error {
	// Line numbers count the header as line 1, as editors do.
	return fmt.Errorf("%s line %d: column %s is %q, want %s", t.name, row+2, col, val, want)
}

// ints reads several integer cells of one row, stopping at the first bad one.
func (t *table) ints(row int, cols ...string) ([]int64, error) {
	out := make([]int64, len(cols))
	var errs []error
	for i, c := range cols {
		v, err := t.int(row, c)
		if err != nil {
			errs = append(errs, err)
			break
		}
		out[i] = v
	}
	return out, errors.Join(errs...)
}

// models splits a gpu_spec cell: allowed GPU models separated by '|'; empty means any.
func models(spec string) []string {
	var out []string
	for _, m := range strings.Split(spec, "|") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}
