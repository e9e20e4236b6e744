package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExporterListensOnLoopbackByDefault: the cluster view is served to this host unless
// --listen names another address.
func TestExporterListensOnLoopbackByDefault(t *testing.T) {
	if def := newExporterCmd().Flags().Lookup("listen").DefValue; def != "127.0.0.1:9403" {
		t.Fatalf("--listen defaults to %q, want 127.0.0.1:9403", def)
	}
}

// TestExporterLogsWhatItsListenerExposes: the start says what the listener serves, who
// can reach it and what guards it, for loopback and for every interface.
func TestExporterLogsWhatItsListenerExposes(t *testing.T) {
	for _, c := range []struct{ listen, reach string }{
		{"127.0.0.1:0", `reachable="this host only"`},
		{":0", `reachable="every network this host is on"`},
	} {
		var logb bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // one reading (of an inventory that is not there), then stop
		f := exporterFlags{listen: c.listen, inventory: filepath.Join(t.TempDir(), "none"), unitMiB: 1024, interval: time.Second}
		if err := runExporter(ctx, f, slog.New(slog.NewTextHandler(&logb, nil))); err != nil {
			t.Fatalf("--listen %s: %v", c.listen, err)
		}
		log := logb.String()
		for _, want := range []string{"msg=listening", "serves=\"GET /metrics: the cluster view", c.reach, `auth="none (no --web.config.file)"`} {
			if !strings.Contains(log, want) {
				t.Errorf("--listen %s: the log lacks %s:\n%s", c.listen, want, log)
			}
		}
	}
}
