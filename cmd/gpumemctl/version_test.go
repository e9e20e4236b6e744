package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/version"
)

func TestVersionFlag(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "gpumemctl version "+version.String()) {
		t.Errorf("--version printed %q", got)
	}
}
