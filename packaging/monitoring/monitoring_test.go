// Package monitoring holds the Prometheus rules and the Grafana dashboard gpumem ships
// (no Go code): these tests keep them in step with the metrics the exporters serve, and
// run promtool's own checks and unit tests of the rules.
package monitoring

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Targets     []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name     string          `json:"name"`
			Query    json.RawMessage `json:"query"`
			AllValue *string         `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
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

var (
	alertRe    = regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`)
	runbookRe  = regexp.MustCompile(`(?m)^\s+runbook_url: "([^"]+)"$`)
	jobRe      = regexp.MustCompile(`\bjob\s*(=|!=|=~|!~)\s*"[^"]*"`)
	headingRe  = regexp.MustCompile(`(?m)^#{2,4} (.+)$`)
	runbookDoc = "https://github.com/gpumem/gpumem/blob/main/docs/monitoring.md#"
)

// TestEveryAlertHasARunbook: each alert links to its own section of docs/monitoring.md,
// which exists, so the page an on-call reader lands on says what the alert means.
func TestEveryAlertHasARunbook(t *testing.T) {
	rules := read(t, "gpumem-rules.yml")
	anchors := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(read(t, "../../docs/monitoring.md"), -1) {
		anchors[githubAnchor(m[1])] = true
	}
	alerts := alertRe.FindAllStringSubmatch(rules, -1)
	// Each alert's block runs to the next alert: its runbook_url is in it.
	starts := alertRe.FindAllStringIndex(rules, -1)
	for i, a := range alerts {
		end := len(rules)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		urls := runbookRe.FindAllStringSubmatch(rules[starts[i][0]:end], -1)
		if len(urls) != 1 {
			t.Errorf("%s: %d runbook_url annotations, want 1", a[1], len(urls))
			continue
		}
		want := runbookDoc + strings.ToLower(a[1])
		if urls[0][1] != want {
			t.Errorf("%s: runbook_url %s, want %s", a[1], urls[0][1], want)
		}
		if !anchors[strings.ToLower(a[1])] {
			t.Errorf("%s: docs/monitoring.md has no section %q for its runbook", a[1], a[1])
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts in gpumem-rules.yml")
	}
}

// githubAnchor is the fragment GitHub gives a Markdown heading.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestRulesForOtherJobNames: the rules select scrape jobs only by the two selectors
// gpumem-rules.sh knows, and the rules it writes for a site's job names and runbook copy
// hold no other job name, keep every rule, and pass promtool where it is installed.
func TestRulesForOtherJobNames(t *testing.T) {
	rules := read(t, "gpumem-rules.yml")
	for _, m := range jobRe.FindAllString(rules, -1) {
		if m != `job="gpumemd"` && m != `job="gpumem-cluster"` {
			t.Errorf("gpumem-rules.yml selects %s: only job=\"gpumemd\" and job=\"gpumem-cluster\" are replaced by gpumem-rules.sh", m)
		}
	}
	same, err := exec.Command("./gpumem-rules.sh").Output()
	if err != nil || string(same) != rules {
		t.Fatalf("gpumem-rules.sh with no arguments: %v; want gpumem-rules.yml as it is", err)
	}
	sidecar, cluster := `job="gpu-nodes",site=~"a|b&c"`, `job="slurm",role="controller"`
	out, err := exec.Command("./gpumem-rules.sh", sidecar, cluster, "https://wiki.example.org/gpumem").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, m := range jobRe.FindAllString(got, -1) {
		if m != `job="gpu-nodes"` && m != `job="slurm"` {
			t.Errorf("the site's rules still select %s", m)
		}
	}
	for _, want := range []string{"up{" + sidecar + "} == 0", "up{" + cluster + "} == 0", `runbook_url: "https://wiki.example.org/gpumem#gpumemsidecardown"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the site's rules lack %s", want)
		}
	}
	if strings.Contains(got, runbookDoc) || len(alertRe.FindAllString(got, -1)) != len(alertRe.FindAllString(rules, -1)) {
		t.Errorf("the site's rules keep a shipped runbook_url or lost an alert:\n%s", got)
	}
	if _, err := exec.Command("./gpumem-rules.sh", "job={x}").Output(); err == nil {
		t.Error("gpumem-rules.sh took a selector with braces")
	}
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		t.Skip("promtool not installed: the site's rules were not checked by promtool check rules")
	}
	site := filepath.Join(t.TempDir(), "gpumem-rules.yml")
	if err := os.WriteFile(site, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(promtool, "check", "rules", site).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules of the site's rules: %v\n%s", err, o)
	}
}

// selectorRe is one metric in a query with its label selector, if any.
var selectorRe = regexp.MustCompile(`\b(gpumem[_:][A-Za-z0-9_:]+)(\{[^}]*\})?`)

// TestPickersFilterEveryPanel: picking a node narrows every panel that shows what
// gpumemd serves. The gpumemd picker follows the node picker (its All is the picked
// nodes' gpumemd, not every one), every gpumemd series in a panel is selected by it, and
// by the node picker too where the series names its node; a panel that reads only the
// cluster exporter says that the pickers do not apply to it.
func TestPickersFilterEveryPanel(t *testing.T) {
	var d Dashboard
	if err := json.Unmarshal([]byte(read(t, "gpumem-dashboard.json")), &d); err != nil {
		t.Fatalf("gpumem-dashboard.json: %v", err)
	}
	for _, v := range d.Templating.List {
		if v.Name == "instance" {
			if !strings.Contains(string(v.Query), "$node") {
				t.Errorf("the gpumemd picker's query %s does not follow the node picker", v.Query)
			}
			if v.AllValue != nil {
				t.Errorf("the gpumemd picker's All is %q: it must be the picked nodes' gpumemd, not a regex of its own", *v.AllValue)
			}
		}
	}
	// The series of gpumemd, and of recording rules over them, with whether each keeps
	// the label a picker selects by: instance (every scraped series has it) and Hostname.
	type keeps struct{ instance, hostname bool }
	local := map[string]keeps{}
	ch := make(chan *prometheus.Desc, 256)
	metrics.NewExporter().Describe(ch)
	metrics.NewBuildInfo().Describe(ch)
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for desc := range ch {
		if m := fq.FindStringSubmatch(desc.String()); m != nil {
			local[m[1]] = keeps{true, strings.Contains(","+m[2]+",", ",Hostname,")}
		}
	}
	rules := read(t, "gpumem-rules.yml")
	by := regexp.MustCompile(`^sum by \(([^)]*)\) \(`)
	for _, m := range regexp.MustCompile(`(?m)^\s+- record: (\S+)\n\s+expr: (.+)$`).FindAllStringSubmatch(rules, -1) {
		for _, src := range selectorRe.FindAllStringSubmatch(m[2], -1) {
			k, ok := local[src[1]]
			if !ok {
				continue
			}
			switch {
			case strings.HasPrefix(m[2], "sum("):
				k = keeps{}
			case by.MatchString(m[2]):
				l := "," + strings.ReplaceAll(by.FindStringSubmatch(m[2])[1], " ", "") + ","
				k = keeps{k.instance && strings.Contains(l, ",instance,"), k.hostname && strings.Contains(l, ",Hostname,")}
			}
			local[m[1]] = k
			break
		}
	}
	filtered := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		gpumemd := false
		for _, tg := range p.Targets {
			for _, m := range selectorRe.FindAllStringSubmatch(tg.Expr, -1) {
				k, ok := local[m[1]]
				if !ok {
					continue
				}
				gpumemd = true
				if !k.instance && !k.hostname {
					t.Errorf("panel %q: %s sums gpumemd's series over every node, which no picker can select: sum the series themselves", p.Title, m[0])
				}
				if k.instance && !strings.Contains(m[2], `instance=~"$instance"`) {
					t.Errorf("panel %q: %s is not selected by the gpumemd picker (instance=~\"$instance\")", p.Title, m[0])
				}
				if k.hostname && !strings.Contains(m[2], `Hostname=~"$node"`) {
					t.Errorf("panel %q: %s names its node but is not selected by the node picker (Hostname=~\"$node\")", p.Title, m[0])
				}
			}
		}
		if gpumemd {
			filtered++
		} else if !strings.Contains(p.Description, "the node pickers do not apply") {
			t.Errorf("panel %q reads only the cluster exporter and does not say that the node pickers do not apply to it", p.Title)
		}
	}
	t.Logf("%d panels follow the pickers", filtered)
}
