package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The client reads answers of its own version and of a gpumemd from before the version
// field, and refuses a newer version or a field it does not know.
func TestClientChecksTheVersion(t *testing.T) {
	for body, want := range map[string]string{
		`{"version": 1, "jobs": [{"job_id": "7"}]}`:           "",
		`{"jobs": [{"job_id": "7"}]}`:                         "",
		`{"version": 2, "jobs": [{"job_id": "7", "gpu": 1}]}`: "format version 2; this gpumem reads version 1: upgrade gpumemctl",
		`{"version": 1, "jobs": [], "nodes": []}`:             `unknown field "nodes"`,
		`[{"url": "x", "jobs": []}]`:                          "not a gpumemd answer",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) }))
		l, err := Client{Base: srv.URL}.Jobs(context.Background(), 0, 1)
		srv.Close()
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v; want %q", body, err, want)
			continue
		}
		if err == nil && (len(l.Jobs) != 1 || l.Jobs[0].ID != "7") {
			t.Errorf("%s: read %+v", body, l)
		}
	}
}
