// Package accounting turns the GPU inventory into Slurm accounting policy that speaks GPU
// memory: what each GPU GRES is worth in GiB (a shard, a MIG instance, a whole GPU), the
// AccountingStorageTRES that tracks them, the TRESBillingWeights that bill them by GiB,
// and the sacctmgr limits that make a GiB quota of Slurm's billing TRES. An admin never
// computes a MIG slice's or a whole GPU's GiB equivalent by hand, and a team cannot
// escape a memory quota by asking for MIG instead of a slice.
//
// Pure: no I/O; the inventory comes in, Slurm configuration text goes out.
package accounting

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slicekind"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Options say how the cluster's GRES are named, as gres.conf names them.
type Options struct {
	// ShardUnitMiB is the memory one shard stands for; 0 means shard.DefaultUnitMiB.
	ShardUnitMiB int64
	// ShardTypes is gpumem.conf's ShardTypes = per-gpu: each shared GPU's gpu record
	// carries shard.TypeName (h100_g0), so its whole-GPU TRES does too.
	ShardTypes bool
}

// Equiv is one accounted GRES and what one of it is worth in GiB of GPU memory.
type Equiv struct {
	TRES string  // Slurm's TRES name: gres/shard, gres/gpu:3g.20gb, gres/gpu:h100
	GiB  float64 // GPU memory of one unit of it
	Kind string  // slicekind.Shard, MIG or GPU
	Node string  // the first node it was seen on, for error messages
}

// Weight is the TRESBillingWeights spelling of the TRES (GRES/ upper-case, as Slurm's
// documentation writes it).
func (e Equiv) Weight() string {
	return "GRES/" + slurmgres.Strip(e.TRES) + "=" + Num(e.GiB)
}

// Num prints a GiB figure as Slurm reads it: no exponent, no trailing zeros.
func Num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

var profileGB = regexp.MustCompile(`^\d+g\.(\d+)gb`)

// MIGGiB is a MIG instance's GiB equivalent: the size its profile is named for (a
// 2g.20gb instance is 20), so it bills as the memory slice a user would compare it
// with. NVIDIA names profiles by their memory rounded (a 3g.20gb instance has 19.6 GiB);
// a profile whose name carries no size counts its real memory, rounded to nearest GiB.
func MIGGiB(in inventory.MIGInstance) float64 {
	if m := profileGB.FindStringSubmatch(in.Profile); m != nil {
		if gb, err := strconv.Atoi(m[1]); err == nil && gb > 0 {
			return float64(gb)
		}
	}
	return math.Round(float64(in.MemoryMiB) / 1024)
}

// Equivalents lists every GPU GRES of the cluster with its GiB equivalent, sorted: the
// shard (one shard unit), each MIG profile (MIGGiB) and each whole GPU type (the GiB of
// all its shards, so a whole GPU bills as its slices together). A GRES type that means
// two sizes on two nodes cannot carry one weight: that is an error naming both.
func Equivalents(c inventory.Cluster, opt Options) ([]Equiv, error) {
	unit, err := shard.Unit(opt.ShardUnitMiB)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	seen := map[string]Equiv{}
	add := func(e Equiv) error {
		if old, ok := seen[e.TRES]; ok {
			if old.GiB != e.GiB {
				return fmt.Errorf("policy: %s is %s GiB on node %s but %s GiB on node %s: one GRES type must mean one size; give the GPUs distinct types", e.TRES, Num(old.GiB), old.Node, Num(e.GiB), e.Node)
			}
			return nil
		}
		seen[e.TRES] = e
		return nil
	}
	for _, n := range c.Nodes {
		for _, g := range n.GPUs {
			if g.MIG {
				for _, in := range g.Instances {
					if err := add(Equiv{slurmgres.TRES(slurmgres.GPU, in.Profile), MIGGiB(in), slicekind.MIG, n.Name}); err != nil {
						return nil, err
					}
				}
				continue
			}
			typ := g.Type
			if opt.ShardTypes && g.Shared() {
				typ = shard.TypeName(g.Type, g.Index)
			}
			gib := float64(shard.PerGPU(g.MemoryMiB, unit)*unit) / 1024
			if err := add(Equiv{slurmgres.TRES(slurmgres.GPU, typ), gib, slicekind.GPU, n.Name}); err != nil {
				return nil, err
			}
			if g.Shared() {
				if err := add(Equiv{slurmgres.TRES(slurmgres.Shard, ""), float64(unit) / 1024, slicekind.Shard, n.Name}); err != nil {
					return nil, err
				}
			}
		}
	}
	out := make([]Equiv, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TRES < out[j].TRES })
	return out, nil
}

// AccountingTRES is slurm.conf's AccountingStorageTRES value: gres/gpu (the count of
// GPUs of any kind) and every GRES of eq, so that sacct and the billing see each.
func AccountingTRES(eq []Equiv) string {
	names := []string{slurmgres.TRES(slurmgres.GPU, "")}
	for _, e := range eq {
		names = append(names, e.TRES)
	}
	return strings.Join(names, ",")
}

// BillingWeights is a GPU partition's TRESBillingWeights value: each GRES at its GiB,
// nothing else (CPUs, memory and the untyped gres/gpu count bill 0), so a job's billing
// TRES is exactly the GPU memory it holds, in GiB.
func BillingWeights(eq []Equiv) string {
	w := make([]string, len(eq))
	for i, e := range eq {
		w[i] = e.Weight()
	}
	return strings.Join(w, ",")
}

// Quota is a GPU-memory limit for sacctmgr: on an account's association (every user
// of it together), on one user's association in an account, or on a QOS per user.
type Quota struct {
	Scope string // "account", "user" or "qos-per-user"
	Name  string // the account, user or QOS
	In    string // the user's account (Scope "user")
	GiB   int64
}

// ParseQuota reads KIND:NAME=SIZE as the command line gives it: account:teama=60g,
// user:alice@teama=20g, qos:normal=40g (per user of that QOS).
func ParseQuota(s string, parseGiB func(string) (int64, error)) (Quota, error) {
	bad := func(why string) (Quota, error) {
		return Quota{}, fmt.Errorf("quota %q: %s; want account:NAME=SIZE, user:NAME@ACCOUNT=SIZE or qos:NAME=SIZE, e.g. account:teama=60g", s, why)
	}
	kind, rest, ok := strings.Cut(s, ":")
	name, size, ok2 := strings.Cut(rest, "=")
	if !ok || !ok2 || name == "" || size == "" {
		return bad("malformed")
	}
	gib, err := parseGiB(size)
	if err != nil {
		return bad(err.Error())
	}
	if gib <= 0 {
		return bad("the size must be at least 1 GiB")
	}
	q := Quota{Name: name, GiB: gib}
	switch kind {
	case "account":
		q.Scope = "account"
	case "user":
		u, acct, ok := strings.Cut(name, "@")
		if !ok || u == "" || acct == "" {
			return bad("a user quota names its account: user:NAME@ACCOUNT=SIZE")
		}
		q.Scope, q.Name, q.In = "user", u, acct
	case "qos":
		q.Scope = "qos-per-user"
	default:
		return bad(fmt.Sprintf("unknown kind %q", kind))
	}
	if strings.ContainsAny(q.Name+q.In, " \t'\"=,;$`\\") {
		return bad("names hold no spaces, quotes or separators")
	}
	return q, nil
}

// Command is the sacctmgr command that sets q: a limit on the billing TRES, which the
// weights of BillingWeights make GiB of GPU memory of any kind.
func (q Quota) Command() string {
	switch q.Scope {
	case "user":
		return fmt.Sprintf("sacctmgr -i modify user %s where account=%s set GrpTRES=billing=%d", q.Name, q.In, q.GiB)
	case "qos-per-user":
		return fmt.Sprintf("sacctmgr -i modify qos %s set MaxTRESPerUser=billing=%d", q.Name, q.GiB)
	}
	return fmt.Sprintf("sacctmgr -i modify account %s set GrpTRES=billing=%d", q.Name, q.GiB)
}
