//go:build e2e

package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

// whyAsUser runs the lab's gpumemctl why as the lab's unprivileged user, inside the
// lab, so it reads squeue and scontrol as that user does.
func whyAsUser(t *testing.T, id string) string {
	t.Helper()
	return ok(t, "runuser", "-u", labUser, "--", labDir()+"/bin/gpumemctl", "why", id, "--inventory", labDir()+"/inv")
}

// wantWhy checks that why's answer for job id holds every want.
func wantWhy(t *testing.T, id string, want ...string) string {
	t.Helper()
	out := whyAsUser(t, id)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("gpumemctl why %s lacks %q:\n%s", id, w, out)
		}
	}
	return out
}

// TestWhyJobWaits: an ordinary user's pending gpu:mem jobs, each held by one cause, and
// what gpumemctl why tells that user about each: memory fragmented over n3's four L4s,
// every 3g.20gb MIG instance of n2 taken, a job of higher priority ahead, a
// maintenance reservation on the only node of its partition, and a GPU-memory quota.
func TestWhyJobWaits(t *testing.T) {
	ensureLabUser(t)
	cleanAll(t)
	t.Cleanup(func() { cleanAll(t) })

	t.Run("fragmented", func(t *testing.T) {
		// 12 GiB on each L4 of 22.4 GiB: 40 GiB free in all, 10 on each.
		for range 4 {
			waitState(t, sbatchUser(t, "root", "-p", "inference", "--gres=gpu:mem:12g"), "RUNNING")
		}
		id := sbatchUser(t, labUser, "-p", "inference", "--gres=gpu:mem:12g")
		waitPending(t, id, "Resources")
		out := wantWhy(t, id, "It asks for: 12 GiB of GPU memory on one GPU, as a slice of a shared GPU",
			"could hold it: n3",
			"no single GPU has the 12 GiB it asks (the most free on one GPU: 10",
			"the largest request that would start now: --gres=gpu:mem:10g",
			"n3       GPU 0  l4")
		t.Logf("why %s:\n%s", id, out)

		// A second one of the user's, submitted later: the first is ahead of it.
		next := sbatchUser(t, labUser, "-p", "inference", "--gres=gpu:mem:12g")
		waitPending(t, next, "")
		wantWhy(t, next, "1 job(s) ahead of it in its partitions (higher priority, or the same and submitted first) wait too, asking for 12 GiB")
		cleanAll(t)
	})

	t.Run("MIG", func(t *testing.T) {
		waitState(t, sbatchUser(t, "root", "-p", "train", "--gres=gpu:3g.20gb:1"), "RUNNING")
		id := sbatchUser(t, labUser, "-p", "train", "--gres=gpu:3g.20gb:1")
		waitPending(t, id, "Resources")
		out := wantWhy(t, id, "1 MIG instance(s) of profile 3g.20gb", "could hold it: n2",
			"every 3g.20gb MIG instance of its partition is in use (1 of 1)", "3g.20gb(used)")
		t.Logf("why %s:\n%s", id, out)
		// An admin planned n2 as two 3g.20gb: why says so (the lab does not apply it).
		dir := labDir() + "/why-desired"
		os.MkdirAll(hostPath(dir), 0o755)
		t.Cleanup(func() { os.RemoveAll(hostPath(dir)) })
		if err := os.WriteFile(hostPath(dir+"/n2.json"), []byte(`{"version": 1, "node": "n2", "gpus": [{"index": 0, "model": "a100-40gb", "layout": "3g.20gb@0,3g.20gb@4"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		out = ok(t, "runuser", "-u", labUser, "--", labDir()+"/bin/gpumemctl", "why", id, "--inventory", labDir()+"/inv", "--mig-desired", dir)
		if w := "more 3g.20gb instances are planned: n2: 2 (has 1)"; !strings.Contains(out, w) {
			t.Errorf("why %s with n2's layout planned lacks %q:\n%s", id, w, out)
		}
		cleanAll(t)
	})

	t.Run("reservation", func(t *testing.T) {
		ok(t, "scontrol", "create", "reservation", "ReservationName=gpumem_why", "StartTime=now", "Duration=10",
			"Nodes=n3", "Users=root", "Flags=maint,ignore_jobs")
		t.Cleanup(func() { slurm(t, 30*time.Second, "", "scontrol", "delete", "ReservationName=gpumem_why") })
		id := sbatchUser(t, labUser, "-p", "inference", "--gres=gpu:mem:4g")
		why := waitPending(t, id, "")
		out := wantWhy(t, id, "reserved for maintenance")
		t.Logf("why %s (Slurm: %s):\n%s", id, why, out)
		cleanAll(t)
	})

	t.Run("quota", func(t *testing.T) {
		needAccounting(t)
		ok(t, "sacctmgr", "-i", "modify", "user", labUser, "where", "account=teama", "set", "GrpTRES=billing=30")
		t.Cleanup(func() {
			ok(t, "sacctmgr", "-i", "modify", "user", labUser, "where", "account=teama", "set", "GrpTRES=billing=-1")
		})
		waitState(t, sbatchUser(t, labUser, "-p", "train", "--gres=gpu:mem:20g"), "RUNNING")
		id := sbatchUser(t, labUser, "-p", "train", "--gres=gpu:mem:20g")
		waitPending(t, id, "Billing")
		out := wantWhy(t, id, "the GPU-memory quota of user "+labUser+" in account teama is 30 GiB; running jobs under it hold 20 GiB and this job needs 20 GiB, so it starts when they free 10 GiB")
		t.Logf("why %s:\n%s", id, out)
		cleanAll(t)
	})

	t.Run("PrivateData", func(t *testing.T) {
		cleanAll(t)
		// With PrivateData=jobs the user sees none of root's jobs: why still tells the
		// memory (nodes are not private) and never what it cannot see.
		conf := ctldConf("slurm.conf")
		was, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(conf, append(append([]byte{}, was...), "\nPrivateData=jobs\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		reconfigure(t)
		t.Cleanup(func() {
			os.WriteFile(conf, was, 0o644)
			reconfigure(t)
		})
		var roots []string
		for range 4 {
			id := sbatchUser(t, "root", "-p", "inference", "--gres=gpu:mem:12g")
			waitState(t, id, "RUNNING")
			roots = append(roots, id)
		}
		roots = append(roots, sbatchUser(t, "root", "-p", "inference", "--gres=gpu:mem:12g")) // pending, ahead
		id := sbatchUser(t, labUser, "-p", "inference", "--gres=gpu:mem:12g")
		waitPending(t, id, "")
		seen := ok(t, "runuser", "-u", labUser, "--", "squeue", "-h", "-o", "%i")
		if strings.TrimSpace(seen) != id {
			t.Fatalf("PrivateData=jobs did not take: the user's squeue lists %q", seen)
		}
		out := wantWhy(t, id, "could hold it: n3")
		for _, r := range roots {
			if strings.Contains(out, "job "+r) || strings.Contains(out, " "+r+" ") {
				t.Errorf("why names root's job %s under PrivateData=jobs:\n%s", r, out)
			}
		}
		if strings.Contains(out, "is free now") {
			t.Errorf("why says memory is free where no GPU has 12 GiB:\n%s", out)
		}
		if strings.Contains(out, "job(s) ahead") {
			t.Errorf("why counts jobs the user may not see:\n%s", out)
		}
		t.Logf("why %s under PrivateData=jobs:\n%s", id, out)
		cleanAll(t)
	})
}
