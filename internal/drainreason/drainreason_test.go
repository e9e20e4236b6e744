package drainreason

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestKindsAreTold: every reason gpumem writes, of this release or the one before, is
// told for what it is, and no two kinds overlap; an admin's reason is none of them.
func TestKindsAreTold(t *testing.T) {
	type kind struct{ health, fence, mig, gpumem bool }
	for _, c := range []struct {
		reason string
		want   kind
		job    string
	}{
		{ForHealth([]string{"GPU 1 XID 79"}), kind{health: true, gpumem: true}, ""},
		{ForHealth([]string{"NVML failed: Unknown Error", "GPU 0 lost: x"}), kind{health: true, gpumem: true}, ""},
		{"gpumem: GPU 1 XID 79", kind{health: true, gpumem: true}, ""},                                 // older release's health drain
		{"gpumem: NVML failed: NVML cannot start", kind{health: true, gpumem: true}, ""},               // older release's health drain
		{"gpumem: GPU 1 (GPU-b) lost: no longer listed by NVML", kind{health: true, gpumem: true}, ""}, // older release's health drain
		{ForFence("42", "cannot write the limit: EIO"), kind{fence: true, gpumem: true}, "42"},
		{ForFence("17_3", ""), kind{fence: true, gpumem: true}, "17_3"},
		{"gpumem: GPU memory fence failed for job 42", kind{fence: true, gpumem: true}, "42"}, // older release's fence drain
		{MIG, kind{mig: true, gpumem: true}, ""},
		{MIGFailed, kind{mig: true, gpumem: true}, ""},
		{"gpumem: some later kind", kind{gpumem: true}, ""},
		{"RMA GPU 1", kind{}, ""},
		{"gres/gpu count reported lower than configured (1 < 4)", kind{}, ""},
		{"", kind{}, ""},
	} {
		got := kind{IsHealth(c.reason), IsFence(c.reason), IsMIG(c.reason), IsGpumem(c.reason)}
		if got != c.want || FenceJob(c.reason) != c.job {
			t.Errorf("%q: %+v, job %q; want %+v, job %q", c.reason, got, FenceJob(c.reason), c.want, c.job)
		}
	}
}

// TestReasonsAreBounded: a long list of problems, or a long why, is cut to MaxLen bytes at
// a character boundary, and a cut fence reason still names its job.
func TestReasonsAreBounded(t *testing.T) {
	long := strings.Repeat("GPU 1 lost: ünknown ", 40)
	for _, r := range []string{ForHealth([]string{long, long}), ForFence("123456", long)} {
		if len(r) > MaxLen || !strings.HasSuffix(r, "...") || !utf8.ValidString(r) {
			t.Errorf("%q: %d bytes; want at most %d, valid UTF-8, ending in ...", r, len(r), MaxLen)
		}
	}
	if r := ForFence("123456", long); FenceJob(r) != "123456" || !IsFence(r) || IsHealth(r) {
		t.Errorf("cut fence reason %q: job %q", r, FenceJob(r))
	}
	if r := ForHealth([]string{"GPU 1 XID 79"}); r != "gpumem: health: GPU 1 XID 79" {
		t.Errorf("short health reason %q changed", r)
	}
}
