package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Kinds are the kinds of pass test/e2e.sh runs, each on its own lab (docs/lab.md), and
// faults, the rows of the fault matrix that test/faults.sh runs on the plain lab.
var Kinds = []string{"main", "configless", "fence", "typed", "scale", "faults"}

// Table is test/e2e/required.txt: for each kind of pass, the tests it runs, each of
// which must pass there. It is the one place that decides what a pass runs.
type Table map[string][]string

// ParseTable reads the table: a line is comma-separated kinds and tests; # comments.
func ParseTable(text string) (Table, error) {
	t := Table{}
	for i, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: %q names no test (want: KIND[,KIND...] TestName...)", i+1, l)
		}
		for _, k := range strings.Split(f[0], ",") {
			if !slices.Contains(Kinds, k) {
				return nil, fmt.Errorf("line %d: kind %q is none of %s", i+1, k, strings.Join(Kinds, ", "))
			}
			for _, name := range f[1:] {
				if !testName.MatchString(name) {
					return nil, fmt.Errorf("line %d: %q is not a test's name (TestXxx)", i+1, name)
				}
				if !slices.Contains(t[k], name) {
					t[k] = append(t[k], name)
				}
			}
		}
	}
	return t, nil
}

var testName = regexp.MustCompile(`^Test[A-Z0-9_]\w*$`)

// RunPattern is go test's -run for a pass of kind: exactly its tests.
func (t Table) RunPattern(kind string) string {
	return "^(" + strings.Join(t[kind], "|") + ")$"
}

func readTable(path string) (Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTable(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
