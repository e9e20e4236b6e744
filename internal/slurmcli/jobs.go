package slurmcli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmconf"
)

// Job is what gpumem reads of one Slurm job: nothing of it is text the job's user
// chose.
type Job struct {
	ID    string
	State string   // its base state: RUNNING, PENDING, COMPLETING, ...
	UID   int      // the job's user id; -1 when Slurm did not say
	Nodes []string // the nodes it holds, expanded
	Uses  []Use    // its GPUs and shards on each node (needs -d / SHOW_DETAIL)
	Meta  Meta     // who runs it, where, and how; read for jobs that hold their allocation
}

// Meta is what labels a job in metrics and history and what an idle-reclaim exemption
// is decided on. User, Account, QOS and Partition are Slurm's own fields (resolved and
// validated by slurmctld); Name is free text the user chose, read only to group jobs by
// and never to decide anything. A field Slurm did not say, or whose reading could have
// been steered by free text, is "" (Batch: BatchUnknown).
type Meta struct {
	Name, User, Account, QOS, Partition string
	Batch                               int // BatchScript, BatchInteractive or BatchUnknown
}

// Values of Meta.Batch: a batch script (sbatch), an interactive allocation (salloc,
// srun outside one), or not known.
const (
	BatchUnknown = iota
	BatchScript
	BatchInteractive
)

// Holds reports whether the job holds its allocation: running, completing or suspended.
func (j Job) Holds() bool {
	switch j.State {
	case "RUNNING", "COMPLETING", "SUSPENDED":
		return true
	}
	return false
}

// Jobs is one reading of Slurm's job list: the records read, and one error for each
// record that could not be. One bad record never costs the others.
type Jobs struct {
	Jobs []Job
	Bad  []error
	// Unread are the jobs squeue says hold their allocation but whose scontrol record
	// was refused (a job name with a line break or Slurm's separators), as squeue has
	// them: what each asked per node, on a GPU squeue does not name (AnyGPU). Only the
	// text form, whose records can be refused for their free text, has any.
	Unread []Job
}

// ByID indexes the jobs read. A job id that appears twice is a record that cannot be
// trusted (a forged line), so both are left out.
func (js Jobs) ByID() map[string]Job {
	m := map[string]Job{}
	dup := map[string]bool{}
	for _, j := range js.Jobs {
		if _, ok := m[j.ID]; ok {
			dup[j.ID] = true
		}
		m[j.ID] = j
	}
	for id := range dup {
		delete(m, id)
	}
	return m
}

// Uses is the GPU use of every job that holds its allocation, in Slurm's order, then
// that of the Unread jobs, so that no job's allocation is dropped for its name. A job
// id read twice counts for neither.
func (js Jobs) Uses() []Use {
	var out []Use
	byID := js.ByID()
	for _, j := range js.Jobs {
		if j.Holds() && byID[j.ID].ID != "" {
			out = append(out, j.Uses...)
		}
	}
	for _, j := range js.Unread {
		out = append(out, j.Uses...)
	}
	return out
}

// IDLess orders Slurm job numbers numerically, so job 9 comes before job 10.
func IDLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// ParseJobsJSON reads `scontrol -d --json show job`: Slurm 22.05's openapi v0.0.38
// form (job_state a string) and the data_parser form of 23.02 and later (job_state a
// list of flags, the base state first). JSON keeps each field in its own string, so a
// job name can hold anything without moving another field. The error is for a document
// that is not a job list at all; a record that cannot be read is in Jobs.Bad.
func ParseJobsJSON(b []byte) (Jobs, error) {
	var doc struct {
		Jobs   []json.RawMessage `json:"jobs"`
		Errors []struct {
			Error       string `json:"error"`
			Description string `json:"description"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Jobs{}, fmt.Errorf("scontrol --json show job: %v", err)
	}
	if doc.Jobs == nil && len(doc.Errors) > 0 {
		e := doc.Errors[0]
		return Jobs{}, fmt.Errorf("scontrol --json show job: %s %s", e.Error, e.Description)
	}
	var js Jobs
	for i, raw := range doc.Jobs {
		j, err := jobJSON(raw)
		if err != nil {
			js.Bad = append(js.Bad, fmt.Errorf("job record %d: %v", i+1, err))
			continue
		}
		js.Jobs = append(js.Jobs, j)
	}
	return js, nil
}

func jobJSON(raw json.RawMessage) (Job, error) {
	var r struct {
		JobID      number          `json:"job_id"`
		State      json.RawMessage `json:"job_state"`
		UserID     *number         `json:"user_id"`
		Nodes      string          `json:"nodes"`
		GresDetail []string        `json:"gres_detail"`
		Name       string          `json:"name"`
		UserName   string          `json:"user_name"`
		Account    string          `json:"account"`
		QOS        string          `json:"qos"`
		Partition  string          `json:"partition"`
		BatchFlag  json.RawMessage `json:"batch_flag"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Job{}, err
	}
	if !r.JobID.set {
		return Job{}, fmt.Errorf("no job_id")
	}
	j := Job{ID: strconv.FormatInt(r.JobID.n, 10), UID: -1}
	if r.UserID != nil && r.UserID.set {
		j.UID = int(r.UserID.n)
	}
	var one string
	var flags []string
	switch {
	case json.Unmarshal(r.State, &one) == nil:
		j.State = one
	case json.Unmarshal(r.State, &flags) == nil && len(flags) > 0:
		j.State = flags[0]
	default:
		return Job{}, fmt.Errorf("job %s: job_state %s; want a state or a list of them", j.ID, clip(string(r.State)))
	}
	if !j.Holds() {
		return j, nil
	}
	j.Meta = Meta{Name: r.Name, User: null(r.UserName), Account: null(r.Account), QOS: null(r.QOS), Partition: null(r.Partition)}
	var batch bool
	var flag int
	switch {
	case json.Unmarshal(r.BatchFlag, &batch) == nil:
		j.Meta.Batch = batchOf(batch)
	case json.Unmarshal(r.BatchFlag, &flag) == nil:
		j.Meta.Batch = batchOf(flag != 0)
	}
	nodes, err := slurmconf.ExpandHostlistMax(r.Nodes, MaxJobNodes)
	if err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	j.Nodes = nodes
	if len(r.GresDetail) == 0 {
		return j, nil
	}
	// gres_detail has one entry per node of the allocation, in node-list order.
	if len(r.GresDetail) != len(nodes) {
		return Job{}, fmt.Errorf("job %s: %d gres_detail entries for %d nodes", j.ID, len(r.GresDetail), len(nodes))
	}
	for i, d := range r.GresDetail {
		u, err := nodeUses(nodes[i], d)
		if err != nil {
			return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
		}
		j.Uses = append(j.Uses, u...)
	}
	return j, nil
}

// number is a JSON integer as Slurm writes it: plain, or {"set":true,"number":N}
// (data_parser's optional numbers).
type number struct {
	n   int64
	set bool
}

func (v *number) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &v.n); err == nil {
		v.set = true
		return nil
	}
	var o struct {
		Set      bool  `json:"set"`
		Infinite bool  `json:"infinite"`
		Number   int64 `json:"number"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("number %s: %v", clip(string(b)), err)
	}
	v.n, v.set = o.Number, o.Set && !o.Infinite
	return nil
}

// ParseJobsText reads `scontrol -d -o show job`, one job a line, for a Slurm whose
// scontrol has no --json. Slurm prints free text there as it is (a job name, account,
// comment, command, working directory and output paths can hold " JobState=COMPLETED"
// or " Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:80(80/80)"), so a record is read by the
// fields Slurm prints in a fixed order and is refused when a key it depends on shows up
// where Slurm would not print it: once for JobId, UserId, JobState and NodeList, and the
// per-node detail (Nodes= CPU_IDs= Mem= GRES=) only as an unbroken run between JOB_GRES=
// and MinCPUsNode=. A refused record is in Jobs.Bad; the others are read.
func ParseJobsText(out string) Jobs {
	var js Jobs
	// What 22.05's scontrol prints for an empty queue; only as the whole output, so a
	// job's free text cannot hide a record behind it.
	if strings.TrimSpace(out) == "No jobs in the system" {
		return js
	}
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, "JobId=") {
			// A newline inside a free-text field: the record it broke is unreadable,
			// and so is this piece of it.
			if n := len(js.Jobs); n > 0 && js.Jobs[n-1].ID == idOf(lines[i-1]) {
				js.Bad = append(js.Bad, fmt.Errorf("job %s: a field holds a line break", js.Jobs[n-1].ID))
				js.Jobs = js.Jobs[:n-1]
			}
			js.Bad = append(js.Bad, fmt.Errorf("line %d: %q does not start with JobId=", i+1, clip(line)))
			continue
		}
		j, err := jobText(line)
		if err != nil {
			js.Bad = append(js.Bad, err)
			continue
		}
		js.Jobs = append(js.Jobs, j)
	}
	return js
}

func idOf(line string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(line, "JobId="), " ")
	return id
}

// jobText reads one line of `scontrol -d -o show job`.
func jobText(line string) (Job, error) {
	id := idOf(line)
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return Job{}, fmt.Errorf("line %q: JobId %q is not a job number", clip(line), clip(id))
	}
	bad := func(format string, a ...any) (Job, error) {
		return Job{}, fmt.Errorf("job %s: "+format+"; the record is not read", append([]any{id}, a...)...)
	}
	one := map[string]string{}
	for _, key := range []string{"UserId", "JobState", "NodeList"} {
		at := keyAt(line, key)
		if len(at) != 1 {
			return bad("%s= appears %d times, where Slurm prints it once: free text holds it", key, len(at))
		}
		one[key] = valueAt(line, at[0], key)
	}
	j := Job{ID: id, State: one["JobState"], UID: -1}
	if _, uid, ok := strings.Cut(one["UserId"], "("); ok {
		if n, err := strconv.Atoi(strings.TrimSuffix(uid, ")")); err == nil {
			j.UID = n
		}
	}
	if keyAt(line, "JobState")[0] < keyAt(line, "UserId")[0] || keyAt(line, "NodeList")[0] < keyAt(line, "JobState")[0] {
		return bad("UserId=, JobState= and NodeList= out of Slurm's order")
	}
	details := keyAt(line, "Nodes")
	if !j.Holds() {
		return j, nil
	}
	j.Meta = textMeta(line, one["UserId"])
	nodes, err := slurmconf.ExpandHostlistMax(one["NodeList"], MaxJobNodes)
	if err != nil {
		return bad("%v", err)
	}
	j.Nodes = nodes
	if len(details) == 0 {
		return j, nil
	}
	start, end := keyAt(line, "JOB_GRES"), keyAt(line, "MinCPUsNode")
	if len(start) != 1 || len(end) != 1 || len(keyAt(line, "GRES")) != len(details) {
		return bad("per-node GRES detail where Slurm would not print it")
	}
	// The detail must run unbroken from the end of JOB_GRES=... to MinCPUsNode=.
	pos := start[0] + 1 + len("JOB_GRES=")
	pos += strings.IndexByte(line[pos:]+" ", ' ')
	for _, d := range details {
		if d < pos || strings.TrimLeft(line[pos:d], " ") != "" {
			return bad("per-node GRES detail where Slurm would not print it")
		}
		f := strings.Fields(line[d:])
		if len(f) < 4 || !strings.HasPrefix(f[0], "Nodes=") || !strings.HasPrefix(f[1], "CPU_IDs=") ||
			!strings.HasPrefix(f[2], "Mem=") || !strings.HasPrefix(f[3], "GRES=") {
			return bad("node detail %q; want Nodes= CPU_IDs= Mem= GRES=", clip(line[d:]))
		}
		group, err := slurmconf.ExpandHostlistMax(strings.TrimPrefix(f[0], "Nodes="), MaxJobNodes)
		if err != nil {
			return bad("%v", err)
		}
		for _, n := range group {
			u, err := nodeUses(n, strings.TrimPrefix(f[3], "GRES="))
			if err != nil {
				return bad("%v", err)
			}
			j.Uses = append(j.Uses, u...)
		}
		pos = d + 1 + strings.Index(line[d+1:], " GRES=") + 1 + len(f[3])
	}
	if end[0] < pos || strings.TrimLeft(line[pos:end[0]], " ") != "" {
		return bad("per-node GRES detail where Slurm would not print it")
	}
	return j, nil
}

// keyAt returns where " KEY=" starts in line (the index of the space), every time.
func keyAt(line, key string) []int {
	var at []int
	pat := " " + key + "="
	for i := 0; ; {
		k := strings.Index(line[i:], pat)
		if k < 0 {
			return at
		}
		at = append(at, i+k)
		i += k + 1
	}
}

// valueAt is the value of the key found at i: up to the next space.
func valueAt(line string, i int, key string) string {
	v := line[i+len(key)+2:]
	if k := strings.IndexByte(v, ' '); k >= 0 {
		v = v[:k]
	}
	return v
}

// textMeta reads a job's Meta from its `scontrol -o show job` line, whose UserId=,
// JobState= and NodeList= were found once each and in order. Slurm prints Account= and
// QOS= between UserId= and JobState=, BatchFlag= and Partition= between JobState= and
// NodeList=, where only its own fields are printed; a key found more than once (a job
// name holding " Account=x") or elsewhere leaves its field unknown. The name is what
// lies between JobName= and UserId=.
func textMeta(line, userID string) Meta {
	user, state, nodes := keyAt(line, "UserId")[0], keyAt(line, "JobState")[0], keyAt(line, "NodeList")[0]
	between := func(key string, from, to int) string {
		k := keyAt(line, key)
		if len(k) != 1 || k[0] < from || k[0] > to {
			return ""
		}
		return null(valueAt(line, k[0], key))
	}
	m := Meta{Account: between("Account", user, state), QOS: between("QOS", user, state), Partition: between("Partition", state, nodes)}
	m.User, _, _ = strings.Cut(userID, "(")
	if name, ok := strings.CutPrefix(line[len(idOf(line))+len("JobId="):user], " JobName="); ok {
		m.Name = name
	}
	switch between("BatchFlag", state, nodes) {
	case "1":
		m.Batch = BatchScript
	case "0":
		m.Batch = BatchInteractive
	}
	return m
}

func batchOf(batch bool) int {
	if batch {
		return BatchScript
	}
	return BatchInteractive
}

// null is Slurm's "(null)" (and "N/A") as the empty string.
func null(v string) string {
	if v == "(null)" || v == "N/A" {
		return ""
	}
	return v
}
