package slurmgres

import (
	"reflect"
	"strings"
	"testing"
)

func TestDetailForms(t *testing.T) {
	for s, want := range map[string]Detail{
		// 22.05: the GPUs by index; none for a type the job took none of.
		"IDX:0":     {Indexed: true, Index: []int{0}},
		"IDX:0-1":   {Indexed: true, Index: []int{0, 1}},
		"IDX:0-2,5": {Indexed: true, Index: []int{0, 1, 2, 5}},
		"IDX:":      {Indexed: true},
		"IDX:N/A":   {Indexed: true},
		// 24.11 and 26.05: what the job takes of every GPU of the node.
		"23/80,7/80":           {Taken: []int64{23, 7}, Total: []int64{80, 80}},
		"80/80":                {Taken: []int64{80}, Total: []int64{80}},
		"0/22,0/22,10/22,0/22": {Taken: []int64{0, 0, 10, 0}, Total: []int64{22, 22, 22, 22}},
	} {
		got, err := ParseDetail(s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseDetail(%q) = %+v, %v; want %+v", s, got, err, want)
			continue
		}
		if back, err := ParseDetail(got.String()); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%q written as %q reads back as %+v, %v", s, got.String(), back, err)
		}
	}
}

func TestDetailRefusals(t *testing.T) {
	for s, why := range map[string]string{
		"x/80":                                  "want TAKEN/TOTAL or IDX:LIST",
		"5":                                     "want TAKEN/TOTAL or IDX:LIST",
		"5/x":                                   "want TAKEN/TOTAL or IDX:LIST",
		"-1/80":                                 "want TAKEN/TOTAL or IDX:LIST",
		"":                                      "want TAKEN/TOTAL or IDX:LIST",
		"S:0-15":                                "want TAKEN/TOTAL or IDX:LIST",
		"IDX:2-1":                               "want N or N-M with 0 <= N <= M",
		"IDX:a":                                 "want N or N-M with 0 <= N <= M",
		"IDX:0-99999999":                        "more than 1024 GPUs",
		strings.Repeat("0/1,", MaxGPUs) + "0/1": "more than 1024 GPUs",
	} {
		if d, err := ParseDetail(s); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseDetail(%.40q) = %+v, %v; want an error saying %q", s, d, err, why)
		}
	}
}

func TestIndexLists(t *testing.T) {
	for list, want := range map[string][]int{"0": {0}, "0-2,5": {0, 1, 2, 5}, "3,1": {3, 1}, "0-1,1": {0, 1, 1}} {
		got, err := ExpandIndex(list, MaxGPUs)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandIndex(%q) = %v, %v; want %v", list, got, err, want)
		}
		if s := FormatIndex(got); s != list && list != "0-1,1" {
			t.Errorf("FormatIndex(%v) = %q, want %q", got, s, list)
		}
	}
	if _, err := ExpandIndex("0-3", 4); err != nil {
		t.Errorf("four indices under a bound of 4: %v", err)
	}
	if _, err := ExpandIndex("0-3,4", 4); err == nil || !strings.Contains(err.Error(), "more than 4 GPUs") {
		t.Errorf("five indices under a bound of 4: %v", err)
	}
	if got := FormatIndex([]int{0, 2, 3, 4, 5, 7}); got != "0,2-5,7" {
		t.Errorf("FormatIndex = %q", got)
	}
}

// FuzzParseDetail: ParseDetail never panics nor builds past its bound, and what String
// writes reads back the same.
func FuzzParseDetail(f *testing.F) {
	for _, s := range []string{"IDX:0", "IDX:0-1,3", "IDX:", "IDX:N/A", "23/80,7/80", "80/80", "x/80", "IDX:0-99999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDetail(s)
		if err != nil {
			return
		}
		if len(d.Index) > MaxGPUs || len(d.Taken) > MaxGPUs {
			t.Fatalf("%q: %d indices, %d uses; bound %d", s, len(d.Index), len(d.Taken), MaxGPUs)
		}
		back, err := ParseDetail(d.String())
		if err != nil || !reflect.DeepEqual(back, d) {
			t.Fatalf("%q: %+v written as %q reads back as %+v, %v", s, d, d.String(), back, err)
		}
	})
}
