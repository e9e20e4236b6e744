package accounting

import (
	"os"
	"strings"
	"testing"
)

// testdata/assoc_mgr-2205.txt is `scontrol show assoc_mgr flags=assoc accounts=teama`
// and `flags=qos qos=normal` of the 22.05 lab with account teama's quota at 60 GiB and
// gpumemlab's at 30: gpumemlab runs 20 GiB, root a 3g.20gb instance in teama.
func assocFixture(t *testing.T, edit func(string) string) ([]Assoc, []QOSUser) {
	t.Helper()
	b, err := os.ReadFile("testdata/assoc_mgr-2205.txt")
	if err != nil {
		t.Fatal(err)
	}
	a, u, err := ParseAssocMgr(edit(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return a, u
}

func same(s string) string { return s }

func TestParseAssocMgr(t *testing.T) {
	assocs, users := assocFixture(t, same)
	want := []Assoc{
		{Account: "teama", Parent: "root", Billing: Limit{What: "account teama", Quota: 60, Held: 40}},
		{Account: "teama", User: "gpumemlab", Billing: Limit{What: "user gpumemlab in account teama", Quota: 30, Held: 20}},
		{Account: "teama", User: "root", Billing: Limit{What: "user root in account teama", Quota: -1, Held: 20}},
	}
	if len(assocs) != len(want) {
		t.Fatalf("%d associations, want %d: %+v", len(assocs), len(want), assocs)
	}
	for i := range want {
		if assocs[i] != want[i] {
			t.Errorf("association %d = %+v, want %+v", i, assocs[i], want[i])
		}
	}
	if len(users) != 2 || users[0].UID != "2001" || users[0].QOS != "normal" || users[0].Billing.Quota != -1 || users[0].Billing.Held != 20 {
		t.Errorf("QOS users %+v, want 2001 and 0 of normal, no limit, 2001 holding 20", users)
	}
}

func TestExplainNamesQuotaAndWhatIsLeft(t *testing.T) {
	assocs, users := assocFixture(t, func(s string) string {
		// gpumemlab also under a 40 GiB per-user cap of QOS normal.
		return strings.Replace(s, "MaxTRESPU=cpu=N(1),mem=N(0),energy=N(0),node=N(1),billing=N(20)", "MaxTRESPU=cpu=N(1),mem=N(0),energy=N(0),node=N(1),billing=40(20)", 1)
	})
	limits := Applies(assocs, users, "gpumemlab", "2001", "teama", "normal")
	got := strings.Join(Explain(limits, 20), "\n")
	want := `user gpumemlab in account teama: quota 30 GiB, holds 20 GiB, 10 GiB left; this job needs 20 GiB — it waits until 10 GiB of this quota's running jobs end
account teama: quota 60 GiB, holds 40 GiB, 20 GiB left; this job needs 20 GiB — fits
QOS normal per user: quota 40 GiB, holds 20 GiB, 20 GiB left; this job needs 20 GiB — fits`
	if got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}
	// A release that names the user rather than its uid.
	named, users2 := assocFixture(t, func(s string) string {
		s = strings.Replace(s, "MaxTRESPU=cpu=N(1),mem=N(0),energy=N(0),node=N(1),billing=N(20)", "MaxTRESPU=cpu=N(1),mem=N(0),energy=N(0),node=N(1),billing=40(20)", 1)
		return strings.Replace(s, "      2001\n", "      gpumemlab(2001)\n", 1)
	})
	if l := Applies(named, users2, "gpumemlab", "9999", "teama", "normal"); len(l) != 3 || l[2].What != "QOS normal per user" {
		t.Errorf("with name(uid): quotas %+v, want the QOS cap found by name", l)
	}
	if got := Explain(limits[1:2], 80)[0]; !strings.Contains(got, "more than the whole quota: it runs only if an admin raises it to 80 GiB") {
		t.Errorf("a job over the whole quota: %q", got)
	}
	// root has no quota of its own: only the account's applies.
	if l := Applies(assocs, users, "root", "0", "teama", "normal"); len(l) != 1 || l[0].What != "account teama" {
		t.Errorf("root's quotas %+v, want only account teama", l)
	}
}

func TestGresGiB(t *testing.T) {
	eq := map[string]float64{"gres/shard": 1, "gres/gpu:3g.20gb": 20, "gres/gpu:h100": 80}
	for in, want := range map[string]int64{
		"gres:shard:20":                20,
		"gres/shard:h100_g1:7":         7,
		"gres/gpu:3g.20gb:1":           20,
		"gres:gpu:h100:2,gres:shard:3": 163,
		"gres/gpu:2":                   0, // no type, no size
		"N/A":                          0,
	} {
		if got := GresGiB(in, eq); got != want {
			t.Errorf("GresGiB(%q) = %d, want %d", in, got, want)
		}
	}
}

// testdata/assoc_mgr-2411.txt is the same pair of commands on the 24.11 lab, which names
// a QOS's users as name(uid): teama at 60 GiB (root's 60 GiB job running), gpumemlab at
// 30 GiB, QOS normal capping each user at 70 GiB.
func TestParseAssocMgr2411(t *testing.T) {
	b, err := os.ReadFile("testdata/assoc_mgr-2411.txt")
	if err != nil {
		t.Fatal(err)
	}
	assocs, users, err := ParseAssocMgr(string(b))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Explain(Applies(assocs, users, "gpumemlab", "2001", "teama", "normal"), 20), "\n")
	want := `user gpumemlab in account teama: quota 30 GiB, holds 0 GiB, 30 GiB left; this job needs 20 GiB — fits
account teama: quota 60 GiB, holds 60 GiB, 0 GiB left; this job needs 20 GiB — it waits until 20 GiB of this quota's running jobs end
QOS normal per user: quota 70 GiB, holds 0 GiB, 70 GiB left; this job needs 20 GiB — fits`
	if got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}
}
