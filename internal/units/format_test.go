package units

import (
	"fmt"
	"testing"
)

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, mib := range []int64{1, 1023, 1024, 1536, 20480, 19074, 1 << 20, 3 << 20, 1 << 30} {
		s := FormatSize(mib)
		got, err := ParseMiB(s)
		if err != nil || got != mib {
			t.Errorf("ParseMiB(FormatSize(%d)=%q) = %d, %v", mib, s, got, err)
		}
	}
	if s := FormatSize(20480); s != "20g" {
		t.Errorf("FormatSize(20480) = %q, want 20g", s)
	}
}

func TestGiB(t *testing.T) {
	for mib, want := range map[int64]string{81559: "79.6 GiB", 102400: "100 GiB", 20096: "19.6 GiB", 1023: "0.9 GiB"} {
		if got := GiB(mib); got != want {
			t.Errorf("GiB(%d) = %q, want %q", mib, got, want)
		}
	}
}

// The byte formatters replace fmt's %.1f: their output must not differ from it by a byte.
func TestBytesGiBIsPrintf(t *testing.T) {
	for _, b := range []float64{0, 1, 1 << 29, 1.5 * (1 << 30), 20.06 * (1 << 30), 80e9, 1 << 40, 0.04 * (1 << 30), 0.05 * (1 << 30)} {
		if got, want := BytesGiB(b), fmt.Sprintf("%.1f GiB", b/(1<<30)); got != want {
			t.Errorf("BytesGiB(%v) = %q, want %q", b, got, want)
		}
		if got, want := ShortGiB(b), fmt.Sprintf("%.1fG", b/(1<<30)); got != want {
			t.Errorf("ShortGiB(%v) = %q, want %q", b, got, want)
		}
	}
}

func TestFormatFlagAndGiBAndMiB(t *testing.T) {
	for mib, want := range map[int64]string{20480: "20G", 1536: "1536M", 1 << 20: "1024G"} {
		if got := FormatFlag(mib); got != want {
			t.Errorf("FormatFlag(%d) = %q, want %q", mib, got, want)
		}
	}
	for mib, want := range map[int64]string{20480: "20 GiB", 1536: "1536 MiB"} {
		if got := Exact(mib); got != want {
			t.Errorf("Exact(%d) = %q, want %q", mib, got, want)
		}
	}
	for mib, want := range map[int64]string{20480: "20 GiB", 1600: "1.5 GiB = 1600 MiB"} {
		if got := GiBAndMiB(mib); got != want {
			t.Errorf("GiBAndMiB(%d) = %q, want %q", mib, got, want)
		}
	}
}
