package main

import (
	"os/exec"
	"regexp"
	"slices"
	"testing"
)

// TestGlibcNeededAsObjdumpSays: the glibc a package declares is the newest GLIBC_
// version objdump -T shows among the symbols of its binaries.
func TestGlibcNeededAsObjdumpSays(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("SKIP: objdump (binutils) is not installed")
	}
	bins := []string{"/bin/ls", "/bin/sh"}
	out, err := exec.Command("objdump", append([]string{"-T"}, bins...)...).Output()
	if err != nil {
		t.Skip("SKIP: objdump -T cannot read", bins, err)
	}
	var want string
	var newest []int
	for _, m := range regexp.MustCompile(`\(GLIBC_([0-9.]+)\)`).FindAllStringSubmatch(string(out), -1) {
		n, _ := versionNumbers(m[1])
		if newer(n, newest) {
			newest, want = n, m[1]
		}
	}
	got, err := glibcNeeded(bins...)
	if err != nil || got != want || want == "" {
		t.Errorf("glibcNeeded(%v) = %q, %v; objdump -T says %q", bins, got, err, want)
	}
	deb, _ := libcDepends("deb", bins...)
	rpm, _ := libcDepends("rpm", bins...)
	if !slices.Equal(deb, []string{"libc6 (>= " + want + ")"}) || !slices.Equal(rpm, []string{"glibc >= " + want}) {
		t.Errorf("deb %v, rpm %v", deb, rpm)
	}
}

func TestNewerVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"2.34", "2.4", true}, {"2.4", "2.34", false}, {"2.3.4", "2.3", true}, {"2.3", "2.3", false}, {"2.28", "2.2.5", true}} {
		a, _ := versionNumbers(c.a)
		b, _ := versionNumbers(c.b)
		if newer(a, b) != c.want {
			t.Errorf("newer(%s, %s) != %v", c.a, c.b, c.want)
		}
	}
}
