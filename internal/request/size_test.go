package request

import (
	"testing"

	"github.com/gpumem/gpumem/internal/units"
)

func TestParseSize(t *testing.T) {
	ok := []struct {
		in  string
		mib int64
	}{
		{"20g", 20480}, {"20G", 20480}, {"20gib", 20480}, {"20GiB", 20480}, {"20480m", 20480},
		{"20480M", 20480}, {"20480mib", 20480}, {"20gb", 19074}, {"20GB", 19074}, {"1.5t", 1572864},
		{"1.5g", 1536}, {"0.3g", 308}, {"1t", 1048576}, {"1tib", 1048576}, {"1tb", 953675},
		{"1024k", 1}, {"1025k", 2}, {"2mb", 2}, {"1m", 1}, {"1.125t", 1179648},
		{"1024t", 1 << 30}, {"007g", 7168},
	}
	for _, c := range ok {
		got, err := ParseSize(c.in)
		if err != nil || got != c.mib {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.mib)
		}
	}
	const eg = "; e.g. gpu:mem:20g (20 GiB), gpu:mem:20480m, gpu:mem:1.5t"
	bad := []struct{ in, err string }{
		{"", `GPU memory size "" is empty` + eg},
		{"20", `GPU memory size "20" has no unit (k, m, g, t, kib..tib, kb..tb)` + eg},
		{"-5g", `GPU memory size "-5g" is negative: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"-1", `GPU memory size "-1" is negative: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"0g", `GPU memory size "0g" is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"0", `GPU memory size "0" is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"00", `GPU memory size "00" is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"0.000g", `GPU memory size "0.000g" is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"0.0000g", `GPU memory size "0.0000g" is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"0x", `GPU memory size "0x" is zero: GPU memory is asked for as a positive size, at least 1m (1 MiB)` + eg},
		{"0.0.0g", `GPU memory size "0.0.0g" is not a number` + eg},
		{"g", `GPU memory size "g" has no number` + eg},
		{"20x", `GPU memory size "20x" has unknown unit "x" (want k, m, g, t, kib..tib, kb..tb)` + eg},
		{"20 g", `GPU memory size "20 g" has unknown unit " g" (want k, m, g, t, kib..tib, kb..tb)` + eg},
		{"1.2.3g", `GPU memory size "1.2.3g" is not a number` + eg},
		{".5g", `GPU memory size ".5g" is not a number` + eg},
		{"5.g", `GPU memory size "5.g" is not a number` + eg},
		{"1.0001g", `GPU memory size "1.0001g" has more than 3 decimals` + eg},
		{"1025t", `GPU memory size "1025t" is larger than 1024t` + eg},
		{"1024.001t", `GPU memory size "1024.001t" is larger than 1024t` + eg},
		{"99999999999999999999999g", `GPU memory size "99999999999999999999999g" is larger than 1024t` + eg},
		{"512k", `GPU memory size "512k" is below 1 MiB` + eg},
		{"1kb", `GPU memory size "1kb" is below 1 MiB` + eg},
		{"1mb", `GPU memory size "1mb" is below 1 MiB` + eg},
	}
	for _, c := range bad {
		_, err := ParseSize(c.in)
		if err == nil || err.Error() != c.err {
			t.Errorf("ParseSize(%q) error\n got %v\nwant %s", c.in, err, c.err)
		}
	}
}

// FuzzParseSize: any size either fails with a SizeError or lands in 1..MaxMiB MiB and
// survives FormatSize unchanged.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"20g", "1.5t", "20gb", "512k", "1024.001t", "0.3G", "-1g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mib, err := ParseSize(s)
		if err != nil {
			if _, ok := err.(*SizeError); !ok {
				t.Fatalf("ParseSize(%q): %T %v, want *SizeError", s, err, err)
			}
			return
		}
		if mib < 1 || mib > MaxMiB {
			t.Fatalf("ParseSize(%q) = %d MiB, out of range", s, mib)
		}
		if back, err := ParseSize(units.FormatSize(mib)); err != nil || back != mib {
			t.Fatalf("FormatSize(%d) = %q reads back as %d, %v", mib, units.FormatSize(mib), back, err)
		}
	})
}
