// Package gotestjson reads `go test -json`: each top-level test's result with the
// lines it logged, each package's result, and go's own lines. The unit report and
// the e2e report both read it, so how a result or a skip's reason is found is decided
// here once.
package gotestjson

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
)

// Result is one test's end: its name (a subtest's holds its parent's, "A/b"), "pass",
// "fail" or "skip", what it logged between its start and its result, and its seconds.
type Result struct {
	Package, Test, Action string
	Output                []string
	Elapsed               float64
}

// Top is the top-level test a result belongs to.
func (r Result) Top() string { t, _, _ := strings.Cut(r.Test, "/"); return t }

// Logged is the lines the test logged itself (file:line: text), without go test's
// own "=== RUN" and "--- PASS" lines.
func (r Result) Logged() []string {
	var ls []string
	for _, l := range r.Output {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
			ls = append(ls, strings.TrimRight(l, "\n"))
		}
	}
	return ls
}

// SkipReason is what a skipped test logged last (its t.Skip message), without its
// file and line.
func (r Result) SkipReason() string {
	why := "no reason given"
	for _, l := range r.Output {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "_test.go:"); i >= 0 {
			if j := strings.Index(l[i:], ": "); j >= 0 {
				why = l[i+j+2:]
			}
		}
	}
	return why
}

// Handler is told, in the order go test prints them, every output line as `go test -v`
// would print it (Text; From says whose), every test's result and every package's
// ("" Test).
type Handler struct {
	Text    func(line string, from From)
	Test    func(Result)
	Package func(Result)
}

// From is whose line a Text line is.
type From int

const (
	// Go is go's own: a build error, or a line that is not -json's.
	Go From = iota
	// ATest is a test's (its log, its === and --- lines).
	ATest
	// APackage is a package's own (ok, FAIL, PASS, coverage).
	APackage
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// Read feeds h from r until its end.
func Read(r io.Reader, h Handler) error {
	out := map[string][]string{} // package and test -> its lines until its result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			if h.Text != nil {
				h.Text(sc.Text()+"\n", Go)
			}
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output", "build-output":
			if h.Text != nil {
				from := APackage
				switch {
				case e.Action == "build-output":
					from = Go
				case e.Test != "":
					from = ATest
				}
				h.Text(e.Output, from)
			}
			if e.Test != "" {
				out[key] = append(out[key], e.Output)
			}
		case "pass", "fail", "skip":
			res := Result{Package: e.Package, Test: e.Test, Action: e.Action, Output: out[key], Elapsed: e.Elapsed}
			delete(out, key)
			switch {
			case e.Test == "" && h.Package != nil:
				h.Package(res)
			case e.Test != "" && h.Test != nil:
				h.Test(res)
			}
		}
	}
	return sc.Err()
}
