package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPluginReleaseIsTheBuiltOne: the release a plugins package depends on is the one
// its plugin was compiled for, micro release included, read from the plugin itself.
func TestPluginReleaseIsTheBuiltOne(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("const unsigned int plugin_version = 0x180b05; /* 24.11.5 */\nconst char plugin_name[] = \"x\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(dir, "p.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	got, err := pluginRelease(so)
	if err != nil || got != "24.11.5" {
		t.Fatalf("pluginRelease = %q, %v; want 24.11.5", got, err)
	}
	if err := os.WriteFile(src, []byte("int other;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	if _, err := pluginRelease(so); err == nil || !strings.Contains(err.Error(), "no plugin_version") {
		t.Errorf("a library without plugin_version: %v; want an error saying so", err)
	}
}

func TestSlurmDependsOnTheExactRelease(t *testing.T) {
	for _, c := range []struct {
		format, rel, exact string
		want               []string
	}{
		{"deb", "24.11", "24.11.5", []string{"slurm-client (>= 24.11.5~)", "slurm-client (<< 24.11.6~)"}},
		{"rpm", "22.05", "22.05.8", []string{"slurm >= 22.05.8", "slurm < 22.05.9"}},
		{"deb", "26.05", "26.05.5", []string{"slurm-client (>= 26.05.5~)", "slurm-client (<< 26.05.6~)"}},
	} {
		got, err := slurmDepends(c.format, c.rel, c.exact)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("slurmDepends(%s, %s, %s) = %q, %v; want %q", c.format, c.rel, c.exact, got, err, c.want)
		}
	}
	if _, err := slurmDepends("deb", "24.11", "26.05.5"); err == nil {
		t.Error("plugins built for 26.05.5 packaged as 24.11: no error")
	}
}
