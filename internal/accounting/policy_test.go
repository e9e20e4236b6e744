package accounting

import (
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// lab is the test lab's cluster: two shared H100 80GB, an A100 40GB in MIG mode and
// four shared L4 (23034 MiB: 22 shards each).
func lab() inventory.Cluster {
	return inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", GPUs: []inventory.GPU{
			{Index: 0, Type: "h100", MemoryMiB: 81920}, {Index: 1, Type: "h100", MemoryMiB: 81920}}},
		{Name: "n2", GPUs: []inventory.GPU{{Index: 0, Type: "a100-40gb", MemoryMiB: 40960, MIG: true, Instances: []inventory.MIGInstance{
			{Profile: "2g.10gb", MemoryMiB: 9984}, {Profile: "1g.5gb", MemoryMiB: 4864},
			{Profile: "1g.5gb", MemoryMiB: 4864}, {Profile: "3g.20gb", MemoryMiB: 20096}}}}},
		{Name: "n3", GPUs: []inventory.GPU{
			{Index: 0, Type: "l4", MemoryMiB: 23034}, {Index: 1, Type: "l4", MemoryMiB: 23034}}},
	}}
}

func TestEquivalentsOfTheLab(t *testing.T) {
	eq, err := Equivalents(lab(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := AccountingTRES(eq), "gres/gpu,gres/gpu:1g.5gb,gres/gpu:2g.10gb,gres/gpu:3g.20gb,gres/gpu:h100,gres/gpu:l4,gres/shard"; got != want {
		t.Errorf("AccountingTRES = %q, want %q", got, want)
	}
	// The promise: a 20 GiB slice, a 3g.20gb instance and a quarter of an H100
	// weigh the same; a whole L4 weighs its 22 shards.
	if got, want := BillingWeights(eq), "GRES/gpu:1g.5gb=5,GRES/gpu:2g.10gb=10,GRES/gpu:3g.20gb=20,GRES/gpu:h100=80,GRES/gpu:l4=22,GRES/shard=1"; got != want {
		t.Errorf("BillingWeights = %q, want %q", got, want)
	}
}

func TestShardUnitAndTypedShards(t *testing.T) {
	eq, err := Equivalents(lab(), Options{ShardUnitMiB: 512, ShardTypes: true})
	if err != nil {
		t.Fatal(err)
	}
	w := BillingWeights(eq)
	for _, want := range []string{"GRES/shard=0.5", "GRES/gpu:h100_g0=80", "GRES/gpu:h100_g1=80", "GRES/gpu:l4_g1=22,", "GRES/gpu:3g.20gb=20"} {
		if !strings.Contains(w, want) {
			t.Errorf("weights %q lack %s", w, want)
		}
	}
	if strings.Contains(w, "gpu:h100=") {
		t.Errorf("typed shards: the untyped h100 has no gpu record, yet weighed: %s", w)
	}
}

func TestWholeOnlyGPUHasNoShard(t *testing.T) {
	c := inventory.Cluster{Nodes: []inventory.Node{{Name: "a", GPUs: []inventory.GPU{{Type: "h200", MemoryMiB: 144384, Sharing: inventory.SharingWhole}}}}}
	eq, err := Equivalents(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := BillingWeights(eq); got != "GRES/gpu:h200=141" {
		t.Errorf("weights %q, want only the whole H200 at 141 GiB", got)
	}
}

func TestOneTypeTwoSizesIsRefused(t *testing.T) {
	c := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "a", GPUs: []inventory.GPU{{Type: "a100", MemoryMiB: 40960}}},
		{Name: "b", GPUs: []inventory.GPU{{Type: "a100", MemoryMiB: 81920}}},
	}}
	_, err := Equivalents(c, Options{})
	if err == nil || !strings.Contains(err.Error(), "gres/gpu:a100 is 40 GiB on node a but 80 GiB on node b") {
		t.Fatalf("err = %v, want both sizes and nodes named", err)
	}
}

func TestMIGGiB(t *testing.T) {
	for _, c := range []struct {
		in   inventory.MIGInstance
		want float64
	}{
		{inventory.MIGInstance{Profile: "2g.20gb", MemoryMiB: 19968}, 20},
		{inventory.MIGInstance{Profile: "1g.10gb+me", MemoryMiB: 9984}, 10},
		{inventory.MIGInstance{Profile: "7g.141gb", MemoryMiB: 143872}, 141},
		{inventory.MIGInstance{Profile: "odd", MemoryMiB: 9984}, 10}, // 9.75 GiB, rounded
	} {
		if got := MIGGiB(c.in); got != c.want {
			t.Errorf("MIGGiB(%s) = %v, want %v", c.in.Profile, got, c.want)
		}
	}
}

func gib(s string) (int64, error) {
	var n int64
	for _, r := range strings.TrimSuffix(s, "g") {
		n = n*10 + int64(r-'0')
	}
	return n, nil
}

func TestQuotaCommands(t *testing.T) {
	for in, want := range map[string]string{
		"account:teama=60g":    "sacctmgr -i modify account teama set GrpTRES=billing=60",
		"user:alice@teama=20g": "sacctmgr -i modify user alice where account=teama set GrpTRES=billing=20",
		"qos:normal=40g":       "sacctmgr -i modify qos normal set MaxTRESPerUser=billing=40",
	} {
		q, err := ParseQuota(in, gib)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := q.Command(); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	for in, why := range map[string]string{
		"teama=60g":        "malformed",
		"user:alice=20g":   "names its account",
		"group:x=1g":       `unknown kind "group"`,
		"account:a;rm=1g":  "no spaces",
		"account:teama=0g": "at least 1 GiB",
	} {
		if _, err := ParseQuota(in, gib); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: err %v, want %q", in, err, why)
		}
	}
}
