// Command e2ereport is test/e2e.sh's reader of the e2e tests: which tests a pass runs,
// from test/e2e/required.txt, and what a pass's `go test -json` says.
//
//	e2ereport run KIND
//	    go test's -run for a pass of KIND (main, configless, fence, typed, scale, faults)
//	go test -json ... | e2ereport report -pass NAME -kind KIND -log FILE -failures FILE -counts FILE [-only REGEX]
//	    writes the pass's log as `go test -v` would print it, prints each test's result,
//	    says which required test skipped (with its reason) or did not run, and the
//	    first lines each failed test logged; appends what failed, for the run's end, to
//	    -failures, and "passed failed skipped" to -counts. -only is E2E_RUN: only the
//	    required tests it names are required.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

const tablePath = "test/e2e/required.txt"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	table, err := readTable(tablePath)
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "run":
		if len(os.Args) != 3 || len(table[os.Args[2]]) == 0 {
			usage()
		}
		fmt.Println(table.RunPattern(os.Args[2]))
	case "report":
		fs := flag.NewFlagSet("report", flag.ExitOnError)
		var p passReport
		var logPath, failPath, countPath string
		fs.StringVar(&p.pass, "pass", "", "the pass's name (22.05-fence)")
		fs.StringVar(&p.kind, "kind", "", "its kind")
		fs.StringVar(&p.only, "only", "", "E2E_RUN, if set")
		fs.StringVar(&logPath, "log", "", "where the pass's log goes")
		fs.StringVar(&failPath, "failures", "", "the file what failed is appended to")
		fs.StringVar(&countPath, "counts", "", "the file its counts go to")
		_ = fs.Parse(os.Args[2:])
		if p.pass == "" || logPath == "" || failPath == "" || countPath == "" {
			usage()
		}
		p.required = table[p.kind]
		log, err := os.Create(logPath)
		if err != nil {
			fail(err)
		}
		r, err := p.read(os.Stdin, log)
		if err2 := log.Close(); err == nil {
			err = err2
		}
		if err != nil {
			fail(err)
		}
		r.print(os.Stdout, p.pass)
		if err := appendLines(failPath, r.failures(p.pass, logPath)); err != nil {
			fail(err)
		}
		if err := os.WriteFile(countPath, fmt.Appendf(nil, "%d %d %d\n", r.passed, r.failed(), r.skipped), 0o644); err != nil {
			fail(err)
		}
	default:
		usage()
	}
}

func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for _, l := range lines {
		_, _ = io.WriteString(f, l+"\n")
	}
	return f.Close()
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: e2ereport run KIND | e2ereport report -pass NAME -kind KIND -log FILE -failures FILE -counts FILE [-only REGEX]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "e2ereport:", err)
	os.Exit(2)
}
