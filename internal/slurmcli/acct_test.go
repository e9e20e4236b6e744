package slurmcli

import (
	"reflect"
	"testing"
)

func TestParseAcctJobs(t *testing.T) {
	out := "17|17|COMPLETED|00:01:02|gpumem/1;node=n3;kind=shard\n" +
		"18|12_3|CANCELLED by 0|1-00:00:00|note | with a bar\nand a second line\n" +
		"19|19+1|RUNNING|00:00:05|\n"
	got := ParseAcctJobs(out)
	want := []AcctJob{
		{RawID: "17", ID: "17", State: "COMPLETED", Elapsed: "00:01:02", Comment: "gpumem/1;node=n3;kind=shard"},
		{RawID: "18", ID: "12_3", State: "CANCELLED by 0", Elapsed: "1-00:00:00", Comment: "note | with a bar\nand a second line"},
		{RawID: "19", ID: "19+1", State: "RUNNING", Elapsed: "00:00:05"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if j, ok := ParseAcctJob(out, "18"); !ok || j.Key() != "12_3" {
		t.Errorf("job 18: %+v %v; want the array task, keyed 12_3", j, ok)
	}
	if j, _ := ParseAcctJob(out, "19"); j.Key() != "19" {
		t.Errorf("a hetjob component is keyed by its own number: %q", j.Key())
	}
	if _, ok := ParseAcctJob(out, "1"); ok {
		t.Error("found a job that is not there")
	}
}
