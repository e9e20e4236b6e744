package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every test in test/e2e runs in some pass, and every test the table names exists:
// a test left off would never run in CI, a name mistyped would fail every pass.
func TestTableNamesEveryE2ETest(t *testing.T) {
	table, err := readTable(filepath.Join("..", "..", tablePath))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "e2e", "*_test.go"))
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	var tests []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			tests = append(tests, string(m[1]))
		}
	}
	if len(tests) < 50 {
		t.Fatalf("found %d tests in test/e2e; the glob or the pattern is wrong", len(tests))
	}
	listed := map[string]bool{}
	for _, k := range Kinds {
		if len(table[k]) == 0 {
			t.Errorf("no test runs in a %s pass", k)
		}
		for _, n := range table[k] {
			listed[n] = true
			if !slices.Contains(tests, n) {
				t.Errorf("%s names %s for %s passes, and test/e2e has no such test", tablePath, n, k)
			}
		}
	}
	for _, n := range tests {
		if !listed[n] {
			t.Errorf("%s runs in no pass: add it to %s", n, tablePath)
		}
	}
}

func TestParseTableRefuses(t *testing.T) {
	for _, bad := range []string{"main", "mian TestA", "main,fence testA", "main TestA Test-B"} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("ParseTable(%q) accepted it", bad)
		}
	}
	tb, err := ParseTable("# c\nmain,fence TestA TestB\nfence TestA TestC\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := tb.RunPattern("fence"); got != "^(TestA|TestB|TestC)$" {
		t.Errorf("fence's -run is %q", got)
	}
}

// A pass's go test -json, read: results, the log as -v prints it, a required test that
// skipped (with its reason) or never ran, a failed test's own lines, and a pass with no
// result at all.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (1.50s)\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: not the fence lab\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB","Elapsed":0}`,
		`{"Action":"output","Package":"p","Test":"TestC/sub","Output":"    c_test.go:3: job 7 drained n1\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestC/sub","Elapsed":2}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (2.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestC","Elapsed":2}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":3}`,
	}, "\n")
	p := passReport{pass: "24.11-fence", kind: "fence", required: []string{"TestA", "TestB", "TestD", "TestE"}, only: "^Test(A|B|D)$"}
	var log, out bytes.Buffer
	r, err := p.read(strings.NewReader(in), &log)
	if err != nil {
		t.Fatal(err)
	}
	r.print(&out, p.pass)
	if !strings.Contains(log.String(), "=== RUN   TestA\n--- PASS: TestA (1.50s)\n") || !strings.HasSuffix(log.String(), "FAIL\n") {
		t.Errorf("log:\n%s", log.String())
	}
	for _, want := range []string{
		"e2e[24.11-fence]: --- PASS: TestA (1.50s)",
		"e2e[24.11-fence]: --- SKIP: TestB (0.00s)",
		"e2e[24.11-fence]: --- FAIL: TestC (2.00s)",
		"e2e[24.11-fence]: required test TestB skipped: not the fence lab",
		"e2e[24.11-fence]: required test TestD did not run",
		"e2e[24.11-fence]:     c_test.go:3: job 7 drained n1",
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "TestE") {
		t.Errorf("TestE is outside E2E_RUN, yet required:\n%s", out.String())
	}
	if r.passed != 1 || r.failed() != 3 || r.skipped != 1 {
		t.Errorf("counts %d %d %d; want 1 passed, 3 failed (C, B skipped, D missing), 1 skipped", r.passed, r.failed(), r.skipped)
	}
	if f := r.failures(p.pass, "L"); len(f) != 4 || !strings.Contains(f[2], "--- FAIL: TestC") {
		t.Errorf("failures: %q", f)
	}

	// A build that failed: no result, the log's tail and one failure.
	r, _ = p.read(strings.NewReader("# p\n./x_test.go:1: undefined: y\nFAIL\tp [build failed]\n"), &log)
	out.Reset()
	r.print(&out, p.pass)
	if r.failed() != 1 || !strings.Contains(out.String(), "undefined: y") {
		t.Errorf("a failed build: %d failed, report:\n%s", r.failed(), out.String())
	}
	if f := r.failures(p.pass, "L"); len(f) != 1 || !strings.Contains(f[0], "no test result (see L)") {
		t.Errorf("failures of a failed build: %q", f)
	}
}
