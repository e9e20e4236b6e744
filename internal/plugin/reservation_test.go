package plugin

import (
	"strings"
	"testing"
)

// labReservations is what the shims' list holds for the lab's reservation on n3, one
// on no node (a core reservation prints none) and one on n1 and n2.
const labReservations = "r3\tn3\ncores\t\ntwo\tn[1-2]\nall\tALL\n"

// source answers as Slurm would, counting the calls.
func source(calls *int) ReservationSource {
	return func() (map[string]string, error) {
		*calls++
		return ParseReservations(labReservations), nil
	}
}

func TestReservationNodes(t *testing.T) {
	got := ParseReservations(labReservations)
	if len(got) != 2 || got["r3"] != "n3" || got["two"] != "n[1-2]" {
		t.Fatalf("got %v", got)
	}
}

// TestReservationNarrowsAdmission: job_submit admits a job with --reservation against
// the reservation's nodes, from its last look (never a call per job), and a client
// asks for its job's one reservation; a reservation it does not know changes nothing.
func TestReservationNarrowsAdmission(t *testing.T) {
	job := realPlugin(t, &logSink{})
	var calls int
	job.resvSrc = source(&calls) // the watcher's goroutine is not started: looked at once, here
	job.lookAtReservations()
	cases := []struct {
		in            Fields
		gres, refusal string
	}{
		{in: Fields{PerNode: "gres:gpu:mem:10g"}, gres: "gres:shard:10"},
		{in: Fields{PerNode: "gres:gpu:mem:10g", Reservation: "r3"}, gres: "gres:gpu:l4:1"},
		{in: Fields{PerNode: "gres:gpu:mem:10g", Reservation: "unknown"}, gres: "gres:shard:10"},
		{in: Fields{PerNode: "gres:gpu:mem:30g", Reservation: "r3"},
			refusal: "(the job may use only the nodes of reservation r3: n3)"},
		{in: Fields{PerNode: "gres:gpu:mem:10g", Reservation: "r3", Partition: "train"},
			refusal: "partition train has no GPU node gpumem knows. It fits in partition gpu (--partition=gpu) (the job may use only the nodes of reservation r3: n3)"},
	}
	for _, c := range cases {
		v := job.Submit(c.in)
		if v.Fields.PerNode != c.gres && c.refusal == "" || !strings.Contains(v.Refusal, c.refusal) || (c.refusal == "") != (v.Refusal == "") {
			t.Errorf("Submit(%+v) = %q, %q\nwant %q, %q", c.in, v.Fields.PerNode, v.Refusal, c.gres, c.refusal)
		}
	}
	if calls != 1 {
		t.Errorf("job_submit asked for the reservations %d times; want once, off the submit path", calls)
	}
	client := realClient(t)
	client.UseReservations(source(&calls))
	out, refusal := client.SubmitOptions(Options{Gres: "gres:gpu:mem:10g", Reservation: "r3"}, 0, Fields{})
	if refusal != "" || out.Gres != "gres:gpu:l4:1" {
		t.Errorf("client: %+v, %q; want gres:gpu:l4:1", out, refusal)
	}
}
