package slurmrel

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestTableReads(t *testing.T) {
	tab := Table()
	if len(tab.Rows) == 0 || len(tab.Gates) == 0 {
		t.Fatalf("table: %d rows, %d gates", len(tab.Rows), len(tab.Gates))
	}
	for _, g := range []string{MultipleFiles, TypedShards, GPUsExclusive, CgroupSLUID, PrologRunInJob, UpdateSwapsGRES, TRESGresSlash, TRESPerTask, GresStateSaved, JobModifyErrMsg} {
		tab.Since(g) // panics on a gate the table lacks
	}
	ci := 0
	for _, r := range tab.Rows {
		if r.CI {
			ci++
		}
	}
	if ci == 0 {
		t.Error("no release for CI")
	}
}

func TestLookupByMicroRelease(t *testing.T) {
	tab := Table()
	for _, s := range []string{"25.11", "25.11.0", "25.11.3", "slurm 25.11.7", "25.11.0-0rc1"} {
		if r, err := tab.Lookup(s); err != nil || r.Name != "25.11" {
			t.Errorf("Lookup(%q) = %v, %v; want 25.11", s, r.Name, err)
		}
	}
	_, err := tab.Lookup("27.05.1")
	if err == nil || !strings.Contains(err.Error(), "Slurm 27.05.1 is not in gpumem's release table") || !strings.Contains(err.Error(), "26.05") {
		t.Errorf("Lookup(27.05.1): %v; want a refusal naming it and the releases known", err)
	}
}

func TestGatesOpenAtTheirRelease(t *testing.T) {
	tab, err := Parse("22.05 debian:bookworm 5800 19092 munge none yes\ngate g 23.02.7 what\n")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[Version]bool{{}: true, V(22, 5, 8): false, V(23, 2, 6): false, V(23, 2, 7): true, V(24, 11, 0): true} {
		if got := tab.Has(v, "g"); got != want {
			t.Errorf("Has(%v, g) = %v, want %v", v, got, want)
		}
	}
}

func TestParseNamesWhatIsWrong(t *testing.T) {
	ok := "22.05 debian:bookworm 5800 19092 munge none yes\n"
	for text, want := range map[string]string{
		"": "no release rows",
		"22.5 debian:bookworm 5800 19092 munge none yes":                     "want major.minor",
		ok + "22.05 debian:trixie 8800 19091 munge none yes":                 "release 22.05 twice",
		ok + "24.11 debian:trixie 5800 19091 slurm none yes":                 "port block 5800 is 22.05's too",
		ok + "24.11 debian:trixie 8800 19092 slurm none yes":                 "Prometheus port 19092 is 22.05's too",
		ok + "24.11 debian:trixie 8850 19091 slurm none yes":                 "want a multiple of 100",
		ok + "24.11 ubuntu:noble 8800 19091 slurm none yes":                  "want debian:SUITE or source:TAG@SUITE",
		ok + "25.11 source:slurm-25-05-8-1@trixie 2800 19094 slurm none no":  "is not a SchedMD tag of 25.11",
		ok + "25.11 source:slurm-25-11-7-1@trixie 2800 19094 slurm none yes": "CI has no source trees",
		ok + "24.11 debian:trixie 8800 19091 kerberos none yes":              "want munge or slurm",
		"22.05 debian:bookworm 5800 19092 slurm none yes":                    "auth/slurm came with 23.11",
		ok + "gate x 24.05 what":                                             "want a micro release",
		ok + "gate x 24.05.0 a */ b":                                         "without */",
		ok + "gate x 24.05.0 a\ngate x 24.11.0 b":                            "gate x twice",
		ok + "24.11 debian:trixie 8800":                                      "want release, from, ports",
	} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v; want an error saying %q", text, err, want)
		}
	}
}

// The C gates header is printed from the table: the committed one must be the table's.
func TestCHeaderIsTheTables(t *testing.T) {
	b, err := os.ReadFile("../../cgo/include/gpumem_gates.h")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != CHeader(Table()) {
		t.Error("cgo/include/gpumem_gates.h is not the release table's: go run ./cmd/slurm-release cheader > cgo/include/gpumem_gates.h")
	}
}

// A release whose job records the table calls measured has offsets in gpumem_jobrec.h
// (cgo/jobrec-offsets.sh), and one it calls none has none there.
func TestRecordsAsTheJobRecordHeaderHasThem(t *testing.T) {
	b, err := os.ReadFile("../../cgo/include/gpumem_jobrec.h")
	if err != nil {
		t.Fatal(err)
	}
	have := map[[2]int]bool{}
	for _, m := range regexp.MustCompile(`SLURM_VERSION_NUM\((\d+), (\d+), \d+\)`).FindAllStringSubmatch(string(b), -1) {
		a, _ := strconv.Atoi(m[1])
		c, _ := strconv.Atoi(m[2])
		have[[2]int{a, c}] = true
	}
	for _, r := range Table().Rows {
		if got := have[[2]int{r.Version.Major, r.Version.Minor}]; got != r.Records {
			t.Errorf("release %s: records measured %v in the table, offsets in gpumem_jobrec.h %v", r.Name, r.Records, got)
		}
	}
}
