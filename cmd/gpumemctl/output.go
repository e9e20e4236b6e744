package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/gpumem/gpumem/internal/cliflag"
)

// The output formats. Every gpumemctl command that prints data takes -o/--output with
// those of these it has: table for people, json for programs (with a version where the
// command's own document is printed), csv where the data is rows.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatCSV   = "csv"
)

// output is the -o/--output flag. Set refuses a format the command does not have, so
// `-o xml` is a usage error (status 2) naming the formats it has, before anything runs.
type output struct {
	format  string
	formats []string
}

func (o *output) String() string { return o.format }
func (o *output) Type() string   { return "format" }

func (o *output) Set(v string) error {
	if !slices.Contains(o.formats, v) {
		return fmt.Errorf("want %s", orList(o.formats))
	}
	o.format = v
	return nil
}

// addOutput registers -o/--output on fs with the formats the command has, the first
// being the default.
func addOutput(fs *pflag.FlagSet, formats ...string) *output {
	o := &output{format: formats[0], formats: formats}
	fs.VarP(o, "output", "o", "output format: "+orList(formats))
	return o
}

func orList(xs []string) string { return cliflag.OrList(xs) }

// writeJSON prints v as indented JSON, the one JSON layout of gpumemctl's output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// rows is tabular output: a header and rows of cells, printed aligned for -o table and
// as RFC 4180 records for -o csv, so the two never show different columns.
type rows struct {
	head  []string
	cells [][]string
}

func (r *rows) add(cells ...string) { r.cells = append(r.cells, cells) }

// write prints r as a table or as CSV.
func (r rows) write(w io.Writer, format string) error {
	if format == formatCSV {
		cw := csv.NewWriter(w)
		_ = cw.Write(r.head)
		_ = cw.WriteAll(r.cells)
		return cw.Error()
	}
	tw := newTable(w)
	fmt.Fprintln(tw, strings.Join(r.head, "\t"))
	for _, c := range r.cells {
		fmt.Fprintln(tw, strings.Join(c, "\t"))
	}
	return tw.Flush()
}

// newTable is the one table layout: columns two spaces apart.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
