package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/gpumem/gpumem/test/gotestjson"
)

// passReport is what one pass is read with.
type passReport struct {
	pass, kind, only string
	required         []string
}

// results is what a pass's go test said.
type results struct {
	order   []gotestjson.Result          // top-level results, as they came
	logged  map[string][]string          // top-level test -> its lines and its subtests'
	skips   map[string]gotestjson.Result // top-level skips by name
	ran     map[string]bool              // top-level tests with a result
	missing []string                     // required tests that skipped or did not run
	tail    []string                     // the log's last lines, for a pass without any result
	ok      bool                         // some package passed
	passed  int
	failedN int
	skipped int
}

func (r *results) failed() int {
	n := r.failedN + len(r.missing)
	if !r.ok && r.failedN == 0 {
		n++ // no test result at all: the build or the run itself failed
	}
	return n
}

// read copies the pass's output to log as text and gathers its results.
func (p passReport) read(in io.Reader, log io.Writer) (*results, error) {
	r := &results{logged: map[string][]string{}, skips: map[string]gotestjson.Result{}, ran: map[string]bool{}}
	var werr error
	err := gotestjson.Read(in, gotestjson.Handler{
		Text: func(l string, _ gotestjson.From) {
			if _, err := io.WriteString(log, l); err != nil && werr == nil {
				werr = err
			}
			r.tail = append(r.tail, strings.TrimRight(l, "\n"))
			if len(r.tail) > 20 {
				r.tail = r.tail[1:]
			}
		},
		Package: func(res gotestjson.Result) { r.ok = r.ok || res.Action == "pass" },
		Test: func(res gotestjson.Result) {
			top := res.Top()
			r.logged[top] = append(r.logged[top], res.Logged()...)
			if res.Test != top {
				return // a subtest's failure fails its parent too: count the parent
			}
			r.order = append(r.order, res)
			r.ran[top] = true
			switch res.Action {
			case "pass":
				r.passed++
			case "fail":
				r.failedN++
			case "skip":
				r.skipped++
				r.skips[top] = res
			}
		},
	})
	if err == nil {
		err = werr
	}
	if len(r.order) == 0 {
		return r, err // a pass without any result has failed already; its list would only repeat that
	}
	var only *regexp.Regexp
	if p.only != "" {
		// E2E_RUN is go test's -run: its first part names the top-level tests.
		only, _ = regexp.Compile(strings.SplitN(p.only, "/", 2)[0])
	}
	for _, t := range p.required {
		switch {
		case only != nil && !only.MatchString(t):
		case r.skips[t].Test != "":
			r.missing = append(r.missing, "required test "+t+" skipped: "+r.skips[t].SkipReason())
		case !r.ran[t]:
			r.missing = append(r.missing, "required test "+t+" did not run")
		}
	}
	return r, err
}

// print writes each test's result, the required tests missing, and the first lines
// of each failed test, as "e2e[pass]: " lines.
func (r *results) print(w io.Writer, pass string) {
	for _, res := range r.order {
		fmt.Fprintf(w, "e2e[%s]: --- %s: %s (%.2fs)\n", pass, strings.ToUpper(res.Action), res.Test, res.Elapsed)
	}
	for _, m := range r.missing {
		fmt.Fprintf(w, "e2e[%s]: %s\n", pass, m)
	}
	for _, l := range r.failedLines(20) {
		fmt.Fprintf(w, "e2e[%s]: %s\n", pass, l)
	}
	if !r.ok && r.failedN == 0 {
		for _, l := range r.tail {
			fmt.Fprintf(w, "e2e[%s]: %s\n", pass, l)
		}
	}
}

// failedLines is, for each failed top-level test, its FAIL line and the first n lines
// it (or a subtest of it) logged.
func (r *results) failedLines(n int) []string {
	var ls []string
	for _, res := range r.order {
		if res.Action != "fail" {
			continue
		}
		ls = append(ls, fmt.Sprintf("--- FAIL: %s (%.2fs)", res.Test, res.Elapsed))
		logged := r.logged[res.Test]
		ls = append(ls, logged[:min(n, len(logged))]...)
	}
	return ls
}

// failures is what failed in this pass, for the list at the run's end (a CI log is
// read from its tail).
func (r *results) failures(pass, logPath string) []string {
	var ls []string
	for _, m := range r.missing {
		ls = append(ls, "e2e["+pass+"]: "+m)
	}
	for _, l := range r.failedLines(8) {
		ls = append(ls, "e2e["+pass+"]: "+l)
	}
	if len(ls) == len(r.missing) && r.failed() > len(r.missing) {
		ls = append(ls, "e2e["+pass+"]: no test result (see "+logPath+")")
	}
	return ls
}
