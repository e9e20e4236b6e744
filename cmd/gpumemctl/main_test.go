package main

import (
	"os"
	"testing"
	"time"
)

// TestMain keeps the tests off this machine's /etc/slurm/gpumem.conf (a lab may have
// written one): gpumemctl's defaults come from GPUMEM_CONF, here a file that is not
// there, so the built-in defaults apply unless a test names a config.
//
// Times print in UTC, so the golden files hold the same bytes in every time zone.
func TestMain(m *testing.M) {
	os.Setenv("GPUMEM_CONF", "/nonexistent/gpumem.conf")
	time.Local = time.UTC
	os.Exit(m.Run())
}
