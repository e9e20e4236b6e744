// Command unitreport reads `go test -json` on stdin and prints what `go test` would
// (a line per package, the output of each failed test, build errors), then every
// skipped test with its reason and a count of passed, failed and skipped tests: a
// test that cannot check its claim on a machine says SKIP, and the count shows it.
// Skips named in the expected-skips file (its first argument, one test name a line,
// then why) are marked expected; others are marked for a reader to look at.
//
//	go test -json ./... | go run ./test/unitreport test/unit-skips.txt
//
// It exits 1 when a test or package failed or the input held no test result.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type skip struct{ name, why string }

func main() {
	expected := map[string]string{}
	if len(os.Args) > 1 {
		b, err := os.ReadFile(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "unitreport:", err)
			os.Exit(2)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
				expected[f[0]] = strings.Join(f[1:], " ")
			}
		}
	}
	out := map[string][]string{} // package/test -> its output lines, until its result
	var skips []skip
	passed, failed, skipped, results := 0, 0, 0, 0
	pkgFailed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Println(sc.Text()) // go's own messages (a build error without -json's form)
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output", "build-output":
			if e.Action == "build-output" {
				fmt.Print(e.Output)
			} else if e.Test != "" {
				out[key] = append(out[key], e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				switch {
				case e.Action == "fail":
					pkgFailed = true
					fmt.Printf("FAIL\t%s\n", e.Package)
				case e.Action == "pass":
					fmt.Printf("ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
				}
				continue
			}
			results++
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				fmt.Printf("--- FAIL: %s (%s)\n", e.Test, e.Package)
				for _, l := range out[key] {
					if !strings.HasPrefix(l, "=== ") {
						fmt.Print(l)
					}
				}
			case "skip":
				skipped++
				skips = append(skips, skip{e.Package + "." + e.Test, reason(out[key])})
			}
			delete(out, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "unitreport: reading go test -json:", err)
		pkgFailed = true
	}
	sort.Slice(skips, func(i, j int) bool { return skips[i].name < skips[j].name })
	unexpected := 0
	for _, s := range skips {
		test := s.name[strings.LastIndex(s.name, ".")+1:]
		top, _, _ := strings.Cut(test, "/")
		mark := "NOT EXPECTED"
		if why, ok := expected[top]; ok {
			mark = "expected: " + why
		} else {
			unexpected++
		}
		fmt.Printf("SKIP %s: %s [%s]\n", s.name, s.why, mark)
	}
	fmt.Printf("unit: %d passed, %d failed, %d skipped (%d not expected)\n", passed, failed, skipped, unexpected)
	if failed > 0 || pkgFailed || results == 0 {
		os.Exit(1)
	}
}

// reason is what a skipped test logged last (its t.Skip message), without the file name.
func reason(lines []string) string {
	why := "no reason given"
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "_test.go:"); i >= 0 {
			if j := strings.Index(l[i:], ": "); j >= 0 {
				why = l[i+j+2:]
			}
		}
	}
	return why
}
