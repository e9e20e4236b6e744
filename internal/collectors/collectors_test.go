package collectors

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fixed struct {
	d     *prometheus.Desc
	err   error
	calls *int
}

func (f fixed) Describe(ch chan<- *prometheus.Desc) { ch <- f.d }
func (f fixed) Collect(n int, ch chan<- prometheus.Metric) error {
	*f.calls++
	ch <- prometheus.MustNewConstMetric(f.d, prometheus.GaugeValue, float64(n))
	return f.err
}

type wrap struct {
	s    *Set[int]
	n    int
	have bool
}

func (w wrap) Describe(ch chan<- *prometheus.Desc) { w.s.Describe(ch) }
func (w wrap) Collect(ch chan<- prometheus.Metric) { w.s.Collect(w.n, w.have, ch) }

// A collector that fails reads 0 in the success series and still sends what it had;
// with no snapshot no collector runs and each reads 0.
func TestSetReportsEachCollector(t *testing.T) {
	calls := 0
	s := New("t_scrape", Help{Success: "ok?", Duration: "how long"}, map[string]Collector[int]{
		"good": fixed{prometheus.NewDesc("t_good", "g", nil, nil), nil, &calls},
		"bad":  fixed{prometheus.NewDesc("t_bad", "b", nil, nil), errors.New("no"), &calls},
	})
	want := `
# HELP t_bad b
# TYPE t_bad gauge
t_bad 7
# HELP t_good g
# TYPE t_good gauge
t_good 7
# HELP t_scrape_collector_success ok?
# TYPE t_scrape_collector_success gauge
t_scrape_collector_success{collector="bad"} 0
t_scrape_collector_success{collector="good"} 1
`
	if err := testutil.CollectAndCompare(wrap{s, 7, true}, strings.NewReader(want), "t_good", "t_bad", "t_scrape_collector_success"); err != nil {
		t.Error(err)
	}
	calls = 0
	none := `
# HELP t_scrape_collector_success ok?
# TYPE t_scrape_collector_success gauge
t_scrape_collector_success{collector="bad"} 0
t_scrape_collector_success{collector="good"} 0
`
	if err := testutil.CollectAndCompare(wrap{s, 7, false}, strings.NewReader(none), "t_good", "t_bad", "t_scrape_collector_success"); err != nil || calls != 0 {
		t.Errorf("without a snapshot: %v, %d collector calls", err, calls)
	}
}
