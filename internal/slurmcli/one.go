package slurmcli

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// One reads job id's own record, with its per-node GRES detail. Slurm answers
// `scontrol show job ID` with every record of an array when ID is its master id (the
// first task's own id) and with every component of a heterogeneous job when ID is its
// leader's; One keeps the record whose job id is ID, and refuses an answer without
// exactly one.
//
// Without JSON (22.05) it asks for that record alone, by the name Slurm gives it in
// squeue (123_4 for an array task, 123+1 for a hetjob component: numbers only), and
// reads the job's name from squeue as it is, so that the name, the only free text
// Slurm prints before the per-node detail, is skipped by its length however many of
// Slurm's own words or line breaks it holds; nothing after the first MinCPUsNode= that
// follows it (where the command, directories and comment are) is read.
func (r *JobReader) One(ctx context.Context, id string) (Job, error) {
	if err := checkJobID(id); err != nil {
		return Job{}, err
	}
	if !r.noJSON.Load() {
		out, err := r.Scontrol.Run(ctx, ShowJobArgs(id, false)...)
		if err == nil {
			js, err := ParseJobsJSON([]byte(out))
			if err != nil {
				return Job{}, err
			}
			return pickOne(js, id)
		}
		if !noJSON(err) {
			return Job{}, err
		}
		r.noJSON.Store(true)
	}
	sel, rows, err := r.selector(ctx, id)
	if err != nil {
		return Job{}, err
	}
	out, err := r.Scontrol.Run(ctx, "-d", "-o", "show", "job", sel)
	if err != nil {
		return Job{}, err
	}
	name, err := r.nameOf(ctx, id, sel, rows)
	if err != nil {
		return Job{}, err
	}
	return OneText(out, id, name)
}

// ShowOwn is Show for one job id that falls back to One where Slurm's answer holds no
// readable record of id alone: 22.05's text form answers an array's master id (its
// first task's own id) and a hetjob leader's id with every task's or component's
// record, which Show refuses as it would a record split by a line break.
func (r *JobReader) ShowOwn(ctx context.Context, id string) (Jobs, error) {
	js, err := r.Show(ctx, id)
	if err != nil {
		return js, err
	}
	if _, ok := js.ByID()[id]; ok && len(js.Bad) == 0 {
		return js, nil
	}
	if j, oerr := r.One(ctx, id); oerr == nil {
		return Jobs{Jobs: []Job{j}}, nil
	}
	return js, nil
}

// maxComponents bounds the squeue calls for the name of a hetjob's leader.
const maxComponents = 64

// nameOf is job id's name as squeue prints it, to the byte. squeue -j names one job
// for an array task (123_4) and for any job but a hetjob's leader, for which it prints
// every component's name, one a line, in job id order with -S i: the leader's (the
// lowest id) is what is left once the others' names, each asked alone, are taken off
// the end, so a line break in any of them cannot move it.
func (r *JobReader) nameOf(ctx context.Context, id, sel string, rows map[string]string) (string, error) {
	one := func(j string) (string, error) {
		out, err := r.Squeue.Run(ctx, "-h", "-j", j, "-o", "%j")
		return strings.TrimSuffix(out, "\n"), err
	}
	leader, _, het := strings.Cut(sel, "+")
	if !het || leader != id {
		if het {
			return one(id) // a component after the leader: listed alone
		}
		return one(sel)
	}
	var others []string
	for raw, shown := range rows {
		if raw != id && strings.HasPrefix(shown, leader+"+") {
			others = append(others, raw)
		}
	}
	if len(others) > maxComponents {
		return "", fmt.Errorf("job %s: a heterogeneous job of %d components; at most %d are read", id, len(others)+1, maxComponents)
	}
	sort.Slice(others, func(a, b int) bool { return IDLess(others[a], others[b]) })
	all, err := r.Squeue.Run(ctx, "-h", "-j", id, "-S", "i", "-o", "%j")
	if err != nil {
		return "", err
	}
	var tail strings.Builder
	for _, o := range others {
		if IDLess(o, id) {
			return "", fmt.Errorf("job %s: component %s has a lower id than its leader", id, o)
		}
		n, err := one(o)
		if err != nil {
			return "", err
		}
		tail.WriteString(n + "\n")
	}
	name, ok := strings.CutSuffix(all, "\n"+tail.String())
	if len(others) == 0 {
		name, ok = strings.CutSuffix(all, "\n")
	}
	if !ok {
		return "", fmt.Errorf("job %s: squeue's names of its components do not add up (changed meanwhile?)", id)
	}
	return name, nil
}

// pickOne is the record of id among those Slurm printed for it.
func pickOne(js Jobs, id string) (Job, error) {
	var found []Job
	for _, j := range js.Jobs {
		if j.ID == id {
			found = append(found, j)
		}
	}
	if len(found) != 1 {
		return Job{}, fmt.Errorf("job %s: %d records of it among the %d Slurm printed (%d unreadable)", id, len(found), len(js.Jobs), len(js.Bad))
	}
	return found[0], nil
}

// selector is how squeue names job id: 123_4, 123+1, or the id itself, with every row
// squeue printed for -j ID (every task of an array's master id, every component of a
// hetjob's leader), raw id to its name; neither field is free text.
func (r *JobReader) selector(ctx context.Context, id string) (string, map[string]string, error) {
	out, err := r.Squeue.Run(ctx, "-h", "-j", id, "-o", "%A|%i")
	if err != nil {
		return "", nil, err
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		raw, shown, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok {
			continue
		}
		if !selectorOK(shown) || checkJobID(raw) != nil {
			return "", nil, fmt.Errorf("job %s: squeue names a job %q %q; want digits, _ or +", id, clip(raw), clip(shown))
		}
		rows[raw] = shown
	}
	if sel, ok := rows[id]; ok {
		return sel, rows, nil
	}
	return "", nil, fmt.Errorf("job %s: squeue does not list it", id)
}

func selectorOK(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && c != '_' && c != '+' {
			return false
		}
	}
	return true
}

// OneText reads the one record of `scontrol -d -o show job SEL` for job id, whose name
// squeue printed as name. The record is Slurm's first line: "JobId=ID", then only
// numbers (array or hetjob ids) up to " JobName=NAME UserId=".
func OneText(out, id, name string) (Job, error) {
	head := "JobId=" + id + " "
	if !strings.HasPrefix(out, head) {
		return Job{}, fmt.Errorf("job %s: scontrol's answer does not start with its record: %q", id, clip(out))
	}
	at := strings.Index(out, " JobName=")
	if at < 0 || !numericHead(out[:at]) {
		return Job{}, fmt.Errorf("job %s: no JobName= where Slurm prints it", id)
	}
	rest, ok := strings.CutPrefix(out[at+len(" JobName="):], name+" ")
	if set, after, isHet := strings.Cut(rest, " "); ok && isHet && strings.HasPrefix(set, "HetJobIdSet=") && numericHead(set) {
		rest = after // a hetjob's component ids, Slurm's, between its name and UserId=
	}
	if !ok || !strings.HasPrefix(rest, "UserId=") {
		return Job{}, fmt.Errorf("job %s: its record does not hold the name squeue gives it (renamed meanwhile?)", id)
	}
	rest = " " + rest
	end := strings.Index(rest, " MinCPUsNode=")
	if end < 0 {
		return Job{}, fmt.Errorf("job %s: no MinCPUsNode= after its name", id)
	}
	if k := strings.IndexAny(rest[end+1:], " \n"); k >= 0 {
		rest = rest[:end+1+k]
	}
	line := out[:at] + " JobName=" + rest
	if strings.Contains(line, "\n") {
		return Job{}, fmt.Errorf("job %s: a line break among Slurm's own fields", id)
	}
	j, err := jobText(line)
	if err != nil {
		return Job{}, err
	}
	if j.ID != id {
		return Job{}, fmt.Errorf("job %s: the record is job %s's", id, j.ID)
	}
	if j.Holds() {
		j.Meta.Name = name
	}
	return j, nil
}

// numericHead reports whether the fields before JobName= are Slurm's numbers:
// "JobId=N", then ArrayJobId=, ArrayTaskId=, HetJobId=, HetJobOffset= and the like.
func numericHead(s string) bool {
	for _, f := range strings.Split(s, " ") {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" || strings.ContainsAny(k, "\n") {
			return false
		}
		for _, c := range v {
			if (c < '0' || c > '9') && c != '_' && c != '+' && c != '-' && c != ',' {
				return false
			}
		}
	}
	return true
}
