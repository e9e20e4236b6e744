// Package monitoring holds the Prometheus rules and the Grafana dashboard gpumem ships
// (no Go code): these tests keep them in step with the metrics the exporters serve, and
// run promtool's own checks and unit tests of the rules.
package monitoring

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpumem/gpumem/internal/clusterview"
	"github.com/gpumem/gpumem/internal/metrics"
)

// served is every metric name gpumemd and gpumemctl exporter serve, plus up.
func served(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{"up": true}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range []prometheus.Collector{metrics.NewExporter(), metrics.NewBuildInfo(), clusterview.NewExporter()} {
		ch := make(chan *prometheus.Desc, 256)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if m := fq.FindStringSubmatch(d.String()); m != nil {
				names[m[1]] = true
			}
		}
	}
	return names
}

var (
	metricRe = regexp.MustCompile(`\b(gpumem[_:][A-Za-z0-9_:]+|up)\b`)
	recordRe = regexp.MustCompile(`(?m)^\s+- record: (\S+)$`)
	exprRe   = regexp.MustCompile(`(?m)^\s+expr: (.+)$`)
	quotedRe = regexp.MustCompile(`"[^"]*"`)
)

// Dashboard is what the tests and the lab read of the Grafana dashboard.
type Dashboard struct {
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryQueryNamesServedMetrics: each metric a panel, a recording rule or an alert
// reads is one an exporter serves or a recording rule makes, so a renamed metric
// cannot leave a panel silently empty.
func TestEveryQueryNamesServedMetrics(t *testing.T) {
	names := served(t)
	rules := read(t, "gpumem-rules.yml")
	for _, m := range recordRe.FindAllStringSubmatch(rules, -1) {
		names[m[1]] = true
	}
	check := func(where, expr string) {
		// Label values ({reason="gpumem_unavailable"}) are not metric names.
		for _, m := range metricRe.FindAllString(quotedRe.ReplaceAllString(expr, `""`), -1) {
			if !names[m] {
				t.Errorf("%s: %s reads %s, which no exporter serves and no rule records", where, expr, m)
			}
		}
	}
	for _, m := range exprRe.FindAllStringSubmatch(rules, -1) {
		check("gpumem-rules.yml", m[1])
	}
	var d Dashboard
	if err := json.Unmarshal([]byte(read(t, "gpumem-dashboard.json")), &d); err != nil {
		t.Fatalf("gpumem-dashboard.json: %v", err)
	}
	rows := map[string]bool{}
	var n int
	for _, p := range d.Panels {
		if p.Type == "row" {
			rows[p.Title] = true
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			n++
			check("panel "+p.Title, tg.Expr)
		}
	}
	for _, r := range []string{"Fleet", "Node", "GPU", "Jobs", "Demand", "Fragmentation", "Idle GPU memory"} {
		if !rows[r] {
			t.Errorf("the dashboard has no %s row", r)
		}
	}
	t.Logf("%d panel queries, %d rules", n, len(exprRe.FindAllString(rules, -1)))
}

// TestPromtool runs promtool check rules and the rules' unit tests
// (gpumem-rules.test.yml). promtool is Debian's prometheus package, which
// test/lab/deps.sh installs for make test; $PROMTOOL names another.
func TestPromtool(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		t.Skip("promtool not installed (apt-get install prometheus, or test/lab/deps.sh): the alert rules' unit tests did not run")
	}
	for _, args := range [][]string{{"check", "rules", "gpumem-rules.yml"}, {"test", "rules", "gpumem-rules.test.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
