package slurmconf

import "testing"

func TestHasPrologFlag(t *testing.T) {
	for _, c := range []struct {
		line, flag string
		want       bool
	}{
		{"PrologFlags=Contain,RunInJob", "runinjob", true},
		{"PrologFlags=Contain,RunInJob", "Contain", true},
		{"PrologFlags=alloc,contain", "Contain", true},
		{"PrologFlags=Alloc", "Contain", false},
		{"PrologFlags=Containment", "Contain", false},
		{"ClusterName=t", "Contain", false},
	} {
		conf, err := Parse(c.line + "\n")
		if err != nil {
			t.Fatal(err)
		}
		if got := conf.HasPrologFlag(c.flag); got != c.want {
			t.Errorf("%s: HasPrologFlag(%q) = %v; want %v", c.line, c.flag, got, c.want)
		}
	}
}
