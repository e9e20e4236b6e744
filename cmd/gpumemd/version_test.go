package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestVersionFlagNeedsNoConfig: --version answers even where gpumem.conf is missing or
// broken, since an admin asks it exactly when something is wrong.
func TestVersionFlagNeedsNoConfig(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "gpumem.conf")
	if err := os.WriteFile(conf, []byte("[gpumemd]\nPollInterval = often\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parseArgs([]string{"--config", conf}, io.Discard); err == nil {
		t.Fatal("the broken config was accepted; the test needs one gpumemd refuses")
	}
	o, err := parseArgs([]string{"--config", conf, "--version"}, io.Discard)
	if err != nil || !o.Version {
		t.Fatalf("parseArgs(--version) = %+v, %v", o.Version, err)
	}
}
