// Package matrix is the generated matrix of gpu:mem requests beside every option of
// srun, sbatch and salloc that touches resources, on each of the lab's partitions: which
// options there are (read from each release's man pages), the cells they make, how a
// cell's run is judged, and the outcome table a full run writes. Every cell must end
// "ran" or "refused" (at submit, by gpumem, with a reason); anything else is "failed":
// a raw Slurm error, a job that failed, or one still pending when the cell's time is up.
// test/e2e/matrix_test.go runs it against the lab; test/matrix/run.sh runs it in full.
package matrix

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Sizes are the gpu:mem sizes of the matrix: one that shards, the 1g.5gb instance and
// every GPU hold; one that the L4s and H100s hold but no MIG instance of the lab does;
// one only the H100s hold.
var Sizes = []string{"4g", "20g", "60g"}

// Partitions are the lab's partitions, "" for none given (the default, gpu).
var Partitions = []string{"", "gpu", "train", "inference"}

// Commands are the clients whose options the matrix covers.
var Commands = []string{"sbatch", "srun", "salloc"}

// Value is one way a cell gives an option: the arguments it adds.
type Value []string

// Resource lists every option that touches resources, with the values a cell gives it.
// Each value runs in the lab without gpu:mem (so a failure beside gpu:mem is gpumem's):
// from 24.11 Slurm refuses --gpus-per-task or --tres-per-task without --ntasks or
// --gpus ("Failed to validate job spec"), so those cells give -n.
// An option a command's man page does not list is not made into cells for it.
var Resource = map[string][]Value{
	"--nodes":             {{"--nodes=2"}},
	"--ntasks":            {{"--ntasks=2"}},
	"--ntasks-per-node":   {{"--ntasks-per-node=2"}},
	"--ntasks-per-core":   {{"--ntasks-per-core=1"}},
	"--ntasks-per-socket": {{"--ntasks-per-socket=1"}},
	"--ntasks-per-gpu":    {{"--ntasks-per-gpu=2"}},
	"--cpus-per-task":     {{"--cpus-per-task=2"}},
	"--cpus-per-gpu":      {{"--cpus-per-gpu=2"}},
	"--mincpus":           {{"--mincpus=2"}},
	"--mem":               {{"--mem=1G"}},
	"--mem-per-cpu":       {{"--mem-per-cpu=512M"}},
	"--mem-per-gpu":       {{"--mem-per-gpu=2G"}},
	"--gpus":              {{"--gpus=1"}, {"--gpus=2"}},
	"--gpus-per-node":     {{"--gpus-per-node=2"}},
	"--gpus-per-socket":   {{"--gpus-per-socket=1"}},
	"--gpus-per-task":     {{"--gpus-per-task=1", "--ntasks=2"}},
	"--tres-per-task":     {{"--tres-per-task=gres/gpu:1", "--ntasks=2"}},
	"--gres-flags":        {{"--gres-flags=enforce-binding"}},
	"--gpu-bind":          {{"--gpu-bind=closest"}},
	"--tres-bind":         {{"--tres-bind=gres/gpu:closest"}},
	"--gpu-freq":          {{"--gpu-freq=medium"}},
	"--exclusive":         {{"--exclusive"}, {"--exclusive=user"}},
	"--oversubscribe":     {{"--oversubscribe"}},
	"--overcommit":        {{"--overcommit"}},
	"--contiguous":        {{"--contiguous"}},
	"--cores-per-socket":  {{"--cores-per-socket=1"}},
	"--sockets-per-node":  {{"--sockets-per-node=1"}},
	"--threads-per-core":  {{"--threads-per-core=1"}},
	"--extra-node-info":   {{"--extra-node-info=1:1:1"}},
	"--hint":              {{"--hint=nomultithread"}},
	"--distribution":      {{"--distribution=block"}},
	"--spread-job":        {{"--spread-job"}},
	"--use-min-nodes":     {{"--use-min-nodes"}},
	"--switches":          {{"--switches=1"}},
	"--nodelist":          {{"--nodelist=n1"}, {"--nodelist=n3"}},
	"--exclude":           {{"--exclude=n1"}},
	"--constraint":        {{"--constraint=l4"}},
	"--prefer":            {{"--prefer=h100|l4"}},
	"--reservation":       {{"--reservation=" + Reservation}},
	"--tmp":               {{"--tmp=0"}},
	"--array":             {{"--array=0-1"}},
	"--exact":             {{"--exact"}},
	"--overlap":           {{"--overlap"}},
	"--mem-bind":          {{"--mem-bind=local"}},
	"--cpu-bind":          {{"--cpu-bind=cores"}},
	"--accel-bind":        {{"--accel-bind=g"}},
}

// Reservation is the reservation the matrix runner creates (on n3, for root) before the
// cells that name it run, and deletes after.
const Reservation = "gpumem-matrix"

// NotResources are the options of the man pages that are no part of the matrix, each
// with why: they name, time, account or wire up a job, or need what the lab has not.
var NotResources = map[string]string{
	"--gres":        "the request itself",
	"--partition":   "a dimension of the matrix",
	"--licenses":    "licenses are not GPUs, and the lab defines none",
	"--network":     "needs a switch plugin the lab lacks",
	"--core-spec":   "core specialization needs AllowSpecResourcesUsage, which the lab does not set",
	"--thread-spec": "thread specialization needs AllowSpecResourcesUsage, which the lab does not set",
	"--reboot":      "reboots nodes",
	"--power":       "needs a power plugin",
	"--mcs-label":   "needs an MCS plugin",
	"--nodefile":    "the --nodelist option read from a file",
	"--segment":     "needs a block topology", "--spread-segments": "needs a block topology",
	"--consolidate-segments": "needs a block topology",
	"--resources":            "hierarchical resources the lab does not define",
	"--cluster-constraint":   "federation", "--clusters": "federation",
	"--jobid":       "a step in a job that exists, not a new job (steps are tested on their own)",
	"--het-group":   "steps of a heterogeneous job (tested on their own)",
	"--no-allocate": "runs without an allocation",
	"--mem-update":  "changes a running job's memory limit", "--oom-kill-step": "what a step does on OOM",
	"--stepmgr": "where steps are managed", "--resv-ports": "network ports",
	"--delay-boot": "node boot", "--threads": "srun's own threads", "--x11": "X11 forwarding",
}

// notPlacement are the rest: options that name, time, account or wire up a job, and
// never change where or on what it runs.
var notPlacement = strings.Fields(`--account --acctg-freq --async --batch --bb --bbf --bcast
	--bcast-exclude --begin --bell --chdir --comment --compress --container --container-id
	--container-type --cpu-freq --deadline --dependency --disable-status --epilog --error
	--export --export-file --external-launcher --extra --get-user-env --gid --help --ignore-pbs
	--ignore-signals --immediate --input --job-name --kill-command --kill-on-bad-exit
	--kill-on-invalid-dep --label --mail-type --mail-user --mpi --msg-timeout --multi-prog
	--nice --no-bell --no-kill --no-requeue --no-shell --open-mode --output --parsable
	--preserve-env --priority --profile --prolog --propagate --pty --qos --quiet
	--quit-on-interrupt --relative --requeue --send-libs --signal --slurmd-debug --task-epilog
	--task-prolog --test-only --time --time-min --treewidth --uid --unbuffered --usage
	--verbose --version --wait --wait-all-nodes --wait-for-children --wckey --wrap`)

// Unclassified returns the options of a man page that the matrix neither covers nor
// says why not: a new release's man page that adds one makes the matrix incomplete.
func Unclassified(names []string) []string {
	var out []string
	for _, n := range names {
		_, res := Resource[n]
		_, not := NotResources[n]
		if !res && !not && !slices.Contains(notPlacement, n) {
			out = append(out, n)
		}
	}
	return out
}

var manOption = regexp.MustCompile(`\\fB\\-\\-((?:[a-z0-9]|\\-)+)`)

// ManOptions reads the long options a man page (roff source) describes: the names on
// the line after each .TP, the tagged paragraphs that head every option's entry.
func ManOptions(roff string) []string {
	seen := map[string]bool{}
	lines := strings.Split(roff, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], ".TP") {
			continue
		}
		for _, m := range manOption.FindAllStringSubmatch(lines[i+1], -1) {
			seen["--"+strings.ReplaceAll(m[1], `\-`, "-")] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Cell is one run: a command, an option's value, a gpu:mem size and a partition.
type Cell struct {
	Command   string
	Option    string // the man page's name, e.g. "--ntasks-per-gpu"
	Value     Value
	Size      string
	Partition string
}

// Key names the cell in the outcome table.
func (c Cell) Key() string {
	p := c.Partition
	if p == "" {
		p = "-"
	}
	return c.Command + " " + strings.Join(c.Value, " ") + " gpu:mem:" + c.Size + " p=" + p
}

// Argv is the command line the cell runs; name is its job name, by which a runner finds
// (and cancels) its job.
func (c Cell) Argv(name string) []string {
	argv := []string{c.Command, "--job-name=" + name}
	if c.Command == "sbatch" {
		argv = append(argv, "--wait", "--output=/dev/null")
	}
	argv = append(argv, c.Value...)
	argv = append(argv, "--gres=gpu:mem:"+c.Size)
	if c.Partition != "" {
		argv = append(argv, "--partition="+c.Partition)
	}
	if c.Command == "sbatch" {
		return append(argv, "--wrap", "true")
	}
	return append(argv, "true")
}

// Cells is the whole matrix for a release whose man pages list options (by command).
func Cells(options map[string][]string) []Cell {
	var out []Cell
	for _, cmd := range Commands {
		names := slices.Clone(options[cmd])
		sort.Strings(names)
		for _, name := range names {
			for _, v := range Resource[name] {
				for _, size := range Sizes {
					for _, p := range Partitions {
						out = append(out, Cell{Command: cmd, Option: name, Value: v, Size: size, Partition: p})
					}
				}
			}
		}
	}
	return out
}

// Sample is n cells of all, drawn by seed, in the matrix's order.
func Sample(all []Cell, n int, seed int64) []Cell {
	if n >= len(all) {
		return all
	}
	idx := rand.New(rand.NewSource(seed)).Perm(len(all))[:n]
	sort.Ints(idx)
	out := make([]Cell, n)
	for i, j := range idx {
		out[i] = all[j]
	}
	return out
}

// Outcome is how a cell ended.
type Outcome string

const (
	Ran     Outcome = "ran"
	Refused Outcome = "refused" // at submit, by gpumem, with a reason
	Failed  Outcome = "failed"
)

// Result is a cell's outcome, with the line that says why for anything but Ran.
type Result struct {
	Outcome Outcome
	Detail  string
}

// rawSlurm are texts of Slurm's own errors that a translation by gpumem could cause, or
// internal forms no user should read.
var rawSlurm = []string{"Invalid generic resource", "mem_per_tres", "tres_per_", "did not request any GPU",
	slurmgres.Colon + slurmgres.GPU, slurmgres.WithGPU(slurmgres.Slash, ""), "Requested node configuration is not available", "Invalid Trackable RESource"}

// Judge reads how a cell's command ended: its exit code and stderr, and whether it was
// still running (its job pending, or running past its time) when time ran out.
func Judge(code int, stderr string, timedOut bool) Result {
	switch {
	case timedOut:
		return Result{Failed, "still pending or running when the cell's time was up"}
	case code == 0:
		return Result{Outcome: Ran}
	}
	own := ""
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		mine := strings.Contains(l, "gpumem") || strings.Contains(l, "gpu:mem")
		if own == "" && mine {
			own = l
		}
		for _, raw := range rawSlurm {
			if !strings.Contains(l, raw) {
				continue
			}
			// job_submit's refusal reaches the user with the error code's own text after
			// it; anything else is Slurm's error, or an internal form in gpumem's words.
			if own != "" && !mine && (strings.Contains(l, "failed:") || strings.Contains(l, "Unable to allocate resources:")) {
				continue
			}
			return Result{Failed, "a raw Slurm error or internal form: " + l}
		}
	}
	if own != "" && !submitted(stderr) {
		return Result{Refused, own}
	}
	return Result{Failed, fmt.Sprintf("exit %d: %s", code, firstError(stderr))}
}

func firstError(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "(no message)"
}

// submitted says the client got a job before it failed: a refusal at submit has none.
func submitted(stderr string) bool {
	return strings.Contains(stderr, "Submitted batch job") || strings.Contains(stderr, "Granted job allocation") ||
		regexp.MustCompile(`job \d+ queued`).MatchString(stderr)
}
