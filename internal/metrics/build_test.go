package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpumem/gpumem/internal/version"
)

func TestBuildInfo(t *testing.T) {
	c := newBuildInfo(version.Info{Version: "v0.1.0", Revision: "abc123", GoVersion: "go1.26.8"})
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	want := `
# HELP gpumem_build_info A metric with a constant '1' value labeled by the version, revision and Go version gpumemd was built from.
# TYPE gpumem_build_info gauge
gpumem_build_info{goversion="go1.26.8",revision="abc123",version="v0.1.0"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
