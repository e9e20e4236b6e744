package units

import (
	"strings"
	"testing"
	"time"
)

func TestSetting(t *testing.T) {
	for _, c := range []struct {
		in      string
		bare    Bare
		mib     int64
		errPart string // "" accepted
	}{
		{"20g", UnitRequired, 20480, ""}, {"20G", BareMiB, 20480, ""}, {" 512MiB ", BareMiB, 512, ""},
		{"1.5g", BareMiB, 1536, ""}, {"1gb", BareMiB, 954, ""}, {"1t", UnitRequired, 1 << 20, ""},
		{"1024", BareMiB, 1024, ""}, {"1024", UnitRequired, 0, "a bare number is not accepted"},
		{"0", BareMiB, 0, "want a size from 1MiB to 1TiB"}, {"2t", BareMiB, 0, "want a size from 1MiB to 1TiB"},
		{"", BareMiB, 0, "want a size"}, {"20x", UnitRequired, 0, "want a size with its unit such as 20g"},
		{"", UnitRequired, 0, "20g"}, {" 7 ", UnitRequired, 0, "20g"}, {"1.5g", UnitRequired, 1536, ""}, {"1kb", BareMiB, 0, "want a size"},
		{" 2 GiB ", BareMiB, 0, "want a size"}, {"99999999999999999999", BareMiB, 0, "want a size"},
		{"512k", BareMiB, 0, "want a size"}, {"-1", BareMiB, 0, "want a size"},
	} {
		got, err := Setting(c.in, c.bare)
		switch {
		case c.errPart == "" && (err != nil || got != c.mib):
			t.Errorf("Setting(%q, %v) = %d, %v; want %d", c.in, c.bare, got, err, c.mib)
		case c.errPart != "" && (err == nil || !strings.Contains(err.Error(), c.errPart)):
			t.Errorf("Setting(%q, %v) = %d, %v; want an error with %q", c.in, c.bare, got, err, c.errPart)
		}
	}
}

func TestSettings(t *testing.T) {
	got, err := Settings("5g, 10G,20480", BareMiB)
	if err != nil || len(got) != 3 || got[0] != 5<<10 || got[1] != 10<<10 || got[2] != 20<<10 {
		t.Fatalf("Settings = %v, %v", got, err)
	}
	if _, err := Settings("5g,x", BareMiB); err == nil || !strings.HasPrefix(err.Error(), `"x": want a size`) {
		t.Errorf("Settings(5g,x) = %v", err)
	}
}

func TestWholeGiB(t *testing.T) {
	for in, want := range map[string]int64{"60g": 60, "1t": 1024, "512GiB": 512, "2t": 2048, "1.5t": 1536} {
		if got, err := WholeGiB(in); err != nil || got != want {
			t.Errorf("WholeGiB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"60": "60 has no unit: write it as 60g (GiB)", "1.5g": "1.5g is not a whole number of GiB"} {
		if _, err := WholeGiB(in); err == nil || err.Error() != want {
			t.Errorf("WholeGiB(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestDurationIn(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "30": 30 * time.Second, "1h": time.Hour, "0": 0, "1m30s": 90 * time.Second} {
		if got, err := DurationIn(in, 0, time.Hour); err != nil || got != want {
			t.Errorf("DurationIn(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, c := range []struct {
		in     string
		lo, hi time.Duration
		want   string
	}{
		{"often", time.Second, time.Hour, "want a duration with its unit such as 30s, 10m or 1h, or a whole number of seconds; from 1s to 1h"},
		{"3h", time.Second, time.Hour, "want a duration from 1s to 1h"},
		{"0s", AboveZero, time.Hour, "want a duration above 0s and at most 1h"},
		{"-5", 0, time.Hour, "want a duration from 0s to 1h"},
		{"1.5", 0, time.Hour, "want a duration with its unit"},
		{"99999999999999999999", 0, time.Hour, "want a duration with its unit"},
	} {
		if _, err := DurationIn(c.in, c.lo, c.hi); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("DurationIn(%q, %v, %v) = %v, want %q", c.in, c.lo, c.hi, err, c.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1h", 24 * time.Hour: "24h", time.Minute: "1m", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", time.Second: "1s", 0: "0s", 3650 * 24 * time.Hour: "87600h", 10 * time.Minute: "10m"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
