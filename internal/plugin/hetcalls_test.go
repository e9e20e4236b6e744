package plugin

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// job_submit follows a hetjob's components per slurmctld thread: a second component that
// only the node the first may take can hold is refused, as cli_filter refuses it, while
// another thread's job in between changes nothing. Seen on the 22.05 lab before: a client
// without gpumem sent gpu:mem:30g : gpu:mem:30g (n1 alone holds 30g), job_submit accepted
// both components, and the job pended for ever.
func TestJobSubmitFollowsHetComponentsPerThread(t *testing.T) {
	p := realPlugin(t, &logSink{})
	big := func(caller int64, off uint32) Verdict {
		return p.Submit(Fields{PerNode: "gres:gpu:mem:30g", HetJob: true, HetOffset: off, Caller: caller})
	}
	if v := big(7, 0); v.Refusal != "" {
		t.Fatalf("first component: %s", v.Refusal)
	}
	if v := big(8, 0); v.Refusal != "" { // another thread's hetjob meanwhile
		t.Fatalf("another thread's first component: %s", v.Refusal)
	}
	if v := big(7, 1); !strings.Contains(v.Refusal, "heterogeneous job") || !strings.Contains(v.Refusal, "(n1)") {
		t.Errorf("second 30g component on the same thread: %q; want a hetjob refusal naming n1", v.Refusal)
	}
	// A component whose predecessors this thread did not submit is decided alone.
	if v := big(9, 1); v.Refusal != "" {
		t.Errorf("a component without known predecessors: %s", v.Refusal)
	}
	// A small second component still has n2 and n3.
	if v := big(10, 0); v.Refusal != "" {
		t.Fatal(v.Refusal)
	}
	if v := p.Submit(Fields{PerNode: "gres:gpu:mem:4g", HetJob: true, HetOffset: 1, Caller: 10}); v.Refusal != "" {
		t.Errorf("4g after 30g: %s", v.Refusal)
	}
	// A new job on the thread starts afresh.
	if v := big(7, 0); v.Refusal != "" {
		t.Errorf("the thread's next job: %s", v.Refusal)
	}
	// With pinning on, job_submit calls SubmitPinned: components are followed the same.
	if v := p.SubmitPinned(Fields{PerNode: "gres:gpu:mem:30g", HetJob: true, HetOffset: 1, Caller: 7}); !strings.Contains(v.Refusal, "heterogeneous job") {
		t.Errorf("second 30g component through SubmitPinned: %q; want a hetjob refusal", v.Refusal)
	}
}

// Records of threads that went away are dropped, in sweeps made once the records have
// doubled, so that the map stays within about twice the threads of the last 10 s.
func TestHetCallsForgetsOldThreads(t *testing.T) {
	p := realPlugin(t, &logSink{})
	start := p.now()
	for i := int64(1); i <= 1000; i++ {
		p.hetCalls.record(i, 0, nil, start)
	}
	later := start.Add(2 * hetCallTTL)
	for i := int64(1001); i <= 2100; i++ {
		p.hetCalls.record(i, 0, nil, later)
	}
	if n := len(p.hetCalls.by); n != 1100 {
		t.Errorf("%d thread records kept; want the 1100 recent ones", n)
	}
	for k, v := range p.hetCalls.by {
		if v.at != later {
			t.Errorf("thread %d's old record kept", k)
			break
		}
	}
}

// slurmctld ≥ 23.02 calls job_submit from several threads at once: each thread's
// hetjob components are followed apart from the others' while they interleave (run
// under -race in make test).
func TestHetComponentsFromConcurrentThreads(t *testing.T) {
	p := realPlugin(t, &logSink{})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := int64(1); g <= 8; g++ {
		wg.Add(1)
		go func(caller int64) {
			defer wg.Done()
			submit := func(size string, off uint32) Verdict {
				return p.Submit(Fields{PerNode: "gres:gpu:mem:" + size, HetJob: true, HetOffset: off, Caller: caller})
			}
			for i := 0; i < 100; i++ {
				if v := submit("30g", 0); v.Refusal != "" {
					errs <- fmt.Sprintf("thread %d, job %d, first component: %s", caller, i, v.Refusal)
					return
				}
				second, refused := "30g", true
				if i%2 == 1 {
					second, refused = "4g", false
				}
				if v := submit(second, 1); (v.Refusal != "") != refused {
					errs <- fmt.Sprintf("thread %d, job %d: 30g then %s: refusal %q, want refused=%v", caller, i, second, v.Refusal, refused)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
