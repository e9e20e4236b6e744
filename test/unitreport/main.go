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
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/test/gotestjson"
)

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
	var skips []skip
	passed, failed, skipped, results := 0, 0, 0, 0
	pkgFailed := false
	err := gotestjson.Read(os.Stdin, gotestjson.Handler{
		Text: func(l string, from gotestjson.From) {
			if from == gotestjson.Go {
				fmt.Print(l)
			}
		},
		Package: func(r gotestjson.Result) {
			switch r.Action {
			case "fail":
				pkgFailed = true
				fmt.Printf("FAIL\t%s\n", r.Package)
			case "pass":
				fmt.Printf("ok  \t%s\t%.3fs\n", r.Package, r.Elapsed)
			}
		},
		Test: func(r gotestjson.Result) {
			results++
			switch r.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				fmt.Printf("--- FAIL: %s (%s)\n", r.Test, r.Package)
				for _, l := range r.Output {
					if !strings.HasPrefix(l, "=== ") {
						fmt.Print(l)
					}
				}
			case "skip":
				skipped++
				skips = append(skips, skip{r.Package + "." + r.Test, r.SkipReason()})
			}
		},
	})
	if err != nil {
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
