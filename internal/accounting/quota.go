package accounting

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// A Limit is one GPU-memory quota as slurmctld enforces it: a limit on the billing TRES
// and what counts against it now, both in GiB when the billing weights are policy's.
type Limit struct {
	What  string // "account teama", "user alice in account teama", "QOS normal per user"
	Quota int64  // -1: none set
	Held  int64
}

// Left is what the quota still allows.
func (l Limit) Left() int64 { return max(l.Quota-l.Held, 0) }

// Assoc is one association record of `scontrol show assoc_mgr flags=assoc`.
type Assoc struct {
	Account, User, Parent string
	Billing               Limit
}

// QOSUser is one user's per-user limit of a QOS (`flags=qos`, "User Limits").
type QOSUser struct {
	QOS, UID, User string // a release prints the uid, the name or name(uid)
	Billing        Limit
}

// ParseAssocMgr reads `scontrol show assoc_mgr flags=assoc,qos`: each association's
// GrpTRES billing and each QOS user's MaxTRESPU billing, as LIMIT(USED) where N is no
// limit. Lines it does not know are skipped: the format grows between releases.
func ParseAssocMgr(out string) ([]Assoc, []QOSUser, error) {
	var assocs []Assoc
	var users []QOSUser
	var cur *Assoc
	qos, id, inUsers := "", "", false
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(line, "ClusterName="):
			assocs = append(assocs, Assoc{Account: field(line, "Account"), User: userName(field(line, "UserName"))})
			cur, qos = &assocs[len(assocs)-1], ""
			cur.Billing = Limit{Quota: -1}
		case strings.HasPrefix(line, "ParentAccount=") && cur != nil:
			cur.Parent = userName(field(line, "ParentAccount"))
		case strings.HasPrefix(line, "GrpTRES=") && cur != nil:
			l, err := billing(line, "GrpTRES")
			if err != nil {
				return nil, nil, err
			}
			cur.Billing.Quota, cur.Billing.Held = l.Quota, l.Held
		case strings.HasPrefix(line, "QOS="):
			qos, cur, inUsers = userName(field(line, "QOS")), nil, false
		case qos != "" && line == "User Limits":
			inUsers = true
		case qos != "" && line == "Account Limits":
			inUsers = false
		case inUsers && line != "" && !strings.Contains(line, "="):
			id = line
		case inUsers && strings.HasPrefix(line, "MaxTRESPU="):
			l, err := billing(line, "MaxTRESPU")
			if err != nil {
				return nil, nil, err
			}
			u := QOSUser{QOS: qos, Billing: l}
			name, uid, named := strings.Cut(id, "(")
			switch _, err := strconv.Atoi(id); {
			case named:
				u.User, u.UID = name, strings.TrimSuffix(uid, ")")
			case err == nil:
				u.UID = id
			default:
				u.User = id
			}
			users = append(users, u)
		}
	}
	for i := range assocs {
		a := &assocs[i]
		if a.User != "" {
			a.Billing.What = fmt.Sprintf("user %s in account %s", a.User, a.Account)
		} else {
			a.Billing.What = "account " + a.Account
		}
	}
	for i := range users {
		users[i].Billing.What = fmt.Sprintf("QOS %s per user", users[i].QOS)
	}
	return assocs, users, nil
}

// field is KEY's value in a line of space-separated KEY=VALUE.
func field(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// userName drops the "(ID)" Slurm appends to names.
func userName(s string) string {
	name, _, _ := strings.Cut(s, "(")
	return name
}

// billing reads billing=LIMIT(USED) from key's TRES list.
func billing(line, key string) (Limit, error) {
	l := Limit{Quota: -1}
	for _, t := range strings.Split(field(line, key), ",") {
		v, ok := strings.CutPrefix(t, "billing=")
		if !ok {
			continue
		}
		lim, used, ok := strings.Cut(strings.TrimSuffix(v, ")"), "(")
		if !ok {
			return l, fmt.Errorf("assoc_mgr %s %q: want billing=LIMIT(USED)", key, t)
		}
		if lim != "N" {
			n, err := strconv.ParseInt(lim, 10, 64)
			if err != nil {
				return l, fmt.Errorf("assoc_mgr %s %q: limit is not a number", key, t)
			}
			l.Quota = n
		}
		n, err := strconv.ParseFloat(used, 64)
		if err != nil {
			return l, fmt.Errorf("assoc_mgr %s %q: use is not a number", key, t)
		}
		l.Held = int64(n)
	}
	return l, nil
}

// Applies lists the quotas set on a job of user (uid) in account under qos: its user
// association, its account and every parent account, and its QOS's per-user limit.
func Applies(assocs []Assoc, users []QOSUser, user, uid, account, qos string) []Limit {
	var out []Limit
	find := func(acct, u string) *Assoc {
		for i := range assocs {
			if assocs[i].Account == acct && assocs[i].User == u {
				return &assocs[i]
			}
		}
		return nil
	}
	if a := find(account, user); a != nil && a.Billing.Quota >= 0 {
		out = append(out, a.Billing)
	}
	for acct, seen := account, 0; acct != "" && seen < 64; seen++ {
		a := find(acct, "")
		if a == nil {
			break
		}
		if a.Billing.Quota >= 0 {
			out = append(out, a.Billing)
		}
		acct = a.Parent
	}
	for _, q := range users {
		mine := (q.UID != "" && q.UID == uid) || (q.User != "" && q.User == user)
		if q.QOS == qos && mine && q.Billing.Quota >= 0 {
			out = append(out, q.Billing)
		}
	}
	return out
}

// What a quota means for a job that needs some GiB: it fits in what is left, waits for
// running jobs under the quota to end, or never fits the whole quota.
const (
	VerdictFits  = "fits"
	VerdictWaits = "waits"
	VerdictNever = "never"
)

// Verdict is what the quota means for a job that needs need GiB.
func (l Limit) Verdict(need int64) string {
	switch {
	case need > l.Quota:
		return VerdictNever
	case need > l.Left():
		return VerdictWaits
	}
	return VerdictFits
}

// Explain says, for a job that needs need GiB, each quota over it and what is left:
// the lines a user reads to learn why the job waits and what would let it run.
func Explain(limits []Limit, need int64) []string {
	var lines []string
	for _, l := range limits {
		s := fmt.Sprintf("%s: quota %d GiB, holds %d GiB, %d GiB left; this job needs %d GiB", l.What, l.Quota, l.Held, l.Left(), need)
		switch l.Verdict(need) {
		case VerdictNever:
			s += fmt.Sprintf(" — more than the whole quota: it runs only if an admin raises it to %d GiB or more", need)
		case VerdictWaits:
			s += fmt.Sprintf(" — it waits until %d GiB of this quota's running jobs end", need-l.Left())
		default:
			s += " — fits"
		}
		lines = append(lines, s)
	}
	return lines
}

// GresGiB is the GPU memory, per node, of a job's GRES as squeue's %b prints it
// (gres:shard:20 on 22.05, gres/gpu:3g.20gb:1 later; several joined by commas),
// valued by eq (TRES name -> GiB). A GPU request without a type has no single size and
// counts 0.
func GresGiB(tresPerNode string, eq map[string]float64) int64 {
	var gib float64
	for _, e := range slurmgres.Split(tresPerNode) {
		it, err := slurmgres.Parse(e)
		if err != nil || !it.Counted {
			continue
		}
		n := float64(it.Count)
		switch {
		case it.Name == slurmgres.Shard:
			gib += n * eq[slurmgres.TRES(slurmgres.Shard, "")]
		case it.Name == slurmgres.GPU && it.Type != "":
			gib += n * eq[slurmgres.TRES(slurmgres.GPU, it.Type)]
		}
	}
	return int64(gib + 0.5)
}
