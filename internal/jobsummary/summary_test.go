package jobsummary

import (
	"reflect"
	"strings"
	"testing"
)

func sample() Summary {
	return Summary{Version: 1, Node: "n3", Kind: "shard", Seconds: 3600, OverSeconds: 120, Warnings: 1,
		GPUs:   []GPU{{Index: 0, SliceMiB: 4096, PeakMiB: 6144, MeanMiB: 2500}},
		Series: []int64{100, 3000, 6144, 2000}}
}

func TestEncodeParseRoundTrips(t *testing.T) {
	for _, s := range []Summary{
		sample(),
		{Version: 1, Node: "gpu-a100.07", Kind: "mig", GPUs: []GPU{{Index: 3, SliceMiB: 10240}}},
		{Version: 1, Node: "x", Kind: "gpu", Kills: 2, GPUs: []GPU{{0, 81920, 80000, 1}, {1, 81920, 2, 1}}},
	} {
		tok, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(tok, " \n\t") {
			t.Errorf("token %q has a blank: it would split in an AdminComment", tok)
		}
		got, err := Parse(tok)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tok, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("round trip of %q:\n got %+v\nwant %+v", tok, got, s)
		}
	}
}

func TestEncodeBoundsAndRefuses(t *testing.T) {
	s := sample()
	for i := range 40 {
		s.GPUs = append(s.GPUs, GPU{Index: i, SliceMiB: 1 << 30, PeakMiB: 1 << 30, MeanMiB: 1 << 30})
	}
	s.Series = make([]int64, 100000)
	s.Series[77777] = 1 << 30
	tok, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > maxToken {
		t.Fatalf("token of %d bytes, more than Parse reads (%d)", len(tok), maxToken)
	}
	got, err := Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	if !got.MoreGPUs || len(got.GPUs) != MaxGPUs || len(got.Series) != MaxSeries {
		t.Errorf("bounds: more=%v gpus=%d series=%d", got.MoreGPUs, len(got.GPUs), len(got.Series))
	}
	if got.Series[77777*MaxSeries/100000] != 1<<30 {
		t.Errorf("the peak was smoothed away: %v", got.Series)
	}
	for _, bad := range []Summary{
		{Node: "n 3", Kind: "shard"}, {Node: "n3;kind=gpu", Kind: "shard"}, {Node: "", Kind: "shard"},
		{Node: "n3", Kind: "wrap"},
	} {
		if tok, err := Encode(bad); err == nil {
			t.Errorf("Encode(%+v) = %q, want refused", bad, tok)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for tok, want := range map[string]string{
		"JS1:abc":                                               "not a gpumem job summary",
		"gpumem/2;node=n3;kind=shard":                           "upgrade gpumemctl",
		"gpumem/x":                                              "not a number",
		"gpumem/1;kind=shard":                                   "no node",
		"gpumem/1;node=n3":                                      "no slice kind",
		"gpumem/1;node=n3;kind=shard;x=1":                       "unknown field",
		"gpumem/1;node=n3;kind=shard;secs=-1":                   "whole number",
		"gpumem/1;node=n3;kind=shard;secs=01":                   "whole number",
		"gpumem/1;node=n3;kind=shard;secs=1;secs=2":             "twice",
		"gpumem/1;node=n3;kind=shard;gpu=1:2:3":                 "index:slice:peak:mean",
		"gpumem/1;node=n3;kind=shard;secs=99999999999999999999": "whole number",
		"gpumem/1;node=n3;kind=shard;mem=" + strings.Repeat("1.", MaxSeries) + "1": "more than",
	} {
		_, err := Parse(tok)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tok, err, want)
		}
	}
}

func TestMergeKeepsWhatOthersWrote(t *testing.T) {
	mine, _ := Encode(sample())
	other := sample()
	other.Node = "n4"
	theirs, _ := Encode(other)
	older := sample()
	older.Seconds = 5
	old, _ := Encode(older)
	for _, c := range []struct{ in, want string }{
		{"", mine},
		{"JS1:H4sIAAAA==", "JS1:H4sIAAAA== " + mine},
		{"reason: bad node  two spaces", "reason: bad node  two spaces " + mine},
		{old, mine},
		{old + " admin note", "admin note " + mine},
		{"admin " + old + " note", "admin note " + mine},
		{theirs, theirs + " " + mine},
		{"see gpumem/docs", "see gpumem/docs " + mine},
		{"x" + old, "x" + old + " " + mine}, // not a token: not after a space
	} {
		got, err := Merge(c.in, mine)
		if err != nil {
			t.Fatalf("Merge(%q): %v", c.in, err)
		}
		if got != c.want {
			t.Errorf("Merge(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		// Merging again changes nothing: a retry after a lost answer is harmless.
		if again, _ := Merge(got, mine); again != got {
			t.Errorf("Merge is not idempotent: %q then %q", got, again)
		}
	}
	if _, err := Merge(strings.Repeat("a", MaxComment+1), mine); err == nil {
		t.Error("a comment over MaxComment was merged")
	}
	if _, err := Merge("", "gpumem/1;node=n3"); err == nil {
		t.Error("an unreadable token was merged")
	}
}

func TestParseComment(t *testing.T) {
	mine, _ := Encode(sample())
	other := sample()
	other.Node = "n4"
	theirs, _ := Encode(other)
	sums, errs := ParseComment("JS1:abc " + mine + " gpumem/docs gpumem/9;node=n5;kind=gpu " + theirs)
	if len(sums) != 2 || sums[0].Node != "n3" || sums[1].Node != "n4" {
		t.Errorf("summaries %+v", sums)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "version 9") {
		t.Errorf("errors %v: want the one for version 9 only", errs)
	}
}

func TestFit(t *testing.T) {
	for _, c := range []struct {
		sums []Summary
		mib  int64
		ok   bool
	}{
		{nil, 0, false},
		{[]Summary{{GPUs: []GPU{{PeakMiB: 0}}}}, 1024, true},
		{[]Summary{{GPUs: []GPU{{PeakMiB: 3000}}}}, 3072, true},
		{[]Summary{{GPUs: []GPU{{PeakMiB: 3072}}}, {GPUs: []GPU{{PeakMiB: 9000}}}}, 9216, true},
	} {
		if mib, ok := Fit(c.sums); mib != c.mib || ok != c.ok {
			t.Errorf("Fit(%+v) = %d %v, want %d %v", c.sums, mib, ok, c.mib, c.ok)
		}
	}
}

func TestWriteReadsLikeSeff(t *testing.T) {
	var b strings.Builder
	Write(&b, Job{ID: "17", State: "COMPLETED", Elapsed: "01:00:00", Sums: []Summary{sample()}})
	got := b.String()
	for _, want := range []string{
		"Job ID: 17\n",
		"GPU memory on n3: a slice (shards) of a shared GPU\n",
		"GPU 0: peak 6 GiB of its 4 GiB (150%), mean 2.4 GiB (61%)\n",
		"Over its slice: 2m; warned once, killed 0 times\n",
		"GPU Memory Efficiency: 150% of 4 GiB",
		"Would have fit in: --gres=gpu:mem:6g per GPU",
		"     4 GiB |..!.\n",
		"     1 GiB |####\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	b.Reset()
	Write(&b, Job{ID: "18"})
	if !strings.Contains(b.String(), "no gpumem summary") {
		t.Errorf("a job without a summary: %q", b.String())
	}
}

func FuzzParseComment(f *testing.F) {
	mine, _ := Encode(sample())
	f.Add(mine)
	f.Add("JS1:abc " + mine + " note")
	f.Add("gpumem/1;node=n3;kind=gpu;gpu=0:1:2:3;gpu=1:1:1:1;mem=1.2.3")
	f.Fuzz(func(t *testing.T, c string) {
		sums, _ := ParseComment(c)
		for _, s := range sums {
			// Whatever is read back encodes and reads again to the same summary, and
			// draws without panicking.
			tok, err := Encode(s)
			if err != nil {
				t.Fatalf("read %+v from %q but cannot write it: %v", s, c, err)
			}
			again, err := Parse(tok)
			if err != nil || !reflect.DeepEqual(again, s) {
				t.Fatalf("%q: read %+v, wrote %q, read back %+v (%v)", c, s, tok, again, err)
			}
			var b strings.Builder
			Write(&b, Job{ID: "1", Sums: []Summary{s}})
		}
		if len(c) <= MaxComment {
			if m, err := Merge(c, mine); err == nil && !strings.Contains(m, mine) {
				t.Fatalf("Merge(%q) = %q lost the token", c, m)
			}
		}
	})
}
