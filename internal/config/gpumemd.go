package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Gpumemd is the [gpumemd] section of gpumem.conf: the node sidecar's settings. Every
// key can also be given as a gpumemd flag, which wins over the file.
type Gpumemd struct {
	NVML   string // NVML backend: real, mock:NAME or fake:PATH
	Listen string // address of /metrics and /api; loopback by default
	// APIPublic serves /api (per-job history: job ids, sizes, times) on a listener that
	// is not loopback without a WebConfigFile (TLS, basic auth); off by default.
	APIPublic     bool
	WebConfigFile string        // exporter-toolkit web config (TLS, basic auth); "" serves plain HTTP
	NodeName      string        // Slurm NodeName; "" means the short host name
	PollInterval  time.Duration // how often NVML is read

	WriteGres      bool          // keep GresConf in step with the GPUs
	GresConf       string        // gres.conf to write
	WriteInventory bool          // write this node's inventory to InventoryDir/NODE.json
	InventoryDir   string        // per-node inventory directory the plugins read
	GresInterval   time.Duration // how often the GPUs are re-discovered for gres.conf
	GresHook       string        // command run after gres.conf changed; "" runs nothing
	GresDevPrefix  string        // replaces /dev in gres.conf File= (a lab's fake device nodes); "" is /dev
	SlurmVersion   string        // Slurm release gres.conf is written for; "auto" asks slurmd -V

	UsagePolicy string        // record, warn or kill
	UsageGrace  time.Duration // how long a job may stay over its slice before kill
	UsageNotify bool          // warnings also go to the job's stderr

	Drain        bool          // drain the node on NVML failure, a lost GPU or a critical XID
	Resume       bool          // resume it when healthy again
	CriticalXIDs []int         // nil means the built-in list
	XIDHold      time.Duration // how long a critical XID keeps the node drained; 0 until the admin resumes the node
	DrainAfter   int           // consecutive bad polls before a drain
	ResumeAfter  int           // consecutive good polls before a resume
	HealthState  string        // file that keeps held XIDs, the GPUs seen and gpumemd's drain across restarts; "" keeps nothing
	Scontrol     string        // scontrol binary: drains, resumes, reads job allocations

	HistoryDB          string        // SQLite file; "" keeps no history
	HistoryBucket      time.Duration // one sample per job per bucket
	HistoryKeepSamples time.Duration
	HistoryKeepJobs    time.Duration
	JobSummary         bool // write what each job used into its AdminComment at its end

	FragmentationSizesMiB []int64 // request sizes fragmentation is measured against

	// Idle reclaim: a job that holds GPU memory here with no GPU process on it (or, with
	// IdleUtilization, its GPUs busy less than that) for IdleAfter is counted and, by
	// IdlePolicy, warned (warn), or warned and IdleGrace later requeued or cancelled with
	// the reason in its AdminComment. off does not look for idle jobs at all.
	IdlePolicy         string        // off, record, warn, requeue or cancel
	IdleAfter          time.Duration // idle time before the policy acts
	IdleGrace          time.Duration // from the warning to requeue or cancel
	IdleUtilization    float64       // 0-1; 0: only jobs without a GPU process are idle
	IdleInterval       time.Duration // how often the jobs running here are listed
	IdleExemptQOS      []string      // QOS whose jobs are never acted on
	IdleExemptAccounts []string      // accounts whose jobs are never acted on
	IdleInteractive    bool          // interactive jobs (salloc, srun) may be acted on too

	// The driver fence (gpumemd prolog/epilog): where Slurm's cgroup/v2 puts job
	// cgroups, and what a failed limit does to the job and the node.
	FenceCgroupRoot  string        // the cgroup2 mount (Slurm's CgroupMountpoint)
	FenceCgroupScope string        // below it, the directory that holds job_ID
	FenceFailure     string        // fail (the prolog fails) or drain (gpumemd's reason first, then fail)
	FenceFailures    string        // file that counts failed fences, one line each; "" counts nowhere
	FenceTimeout     time.Duration // the prolog's deadline, all of it
	FenceState       string        // directory of one file per fenced job naming its fence, for the TaskProlog
}

// DefaultGpumemd is what gpumemd runs with when neither file nor flag says otherwise:
// it measures and reports, and changes nothing in Slurm until told to. The defaults are
// those of GpumemdKeys.
func DefaultGpumemd() Gpumemd { return defaults(gpumemdKeys) }

// LoadGpumemd reads the [gpumemd] section of path; a missing file gives the defaults.
// Unlike the plugins' keys, a bad key here is returned as an error for gpumemd to stop
// on: a sidecar that silently ignored "Drain = yse" would never drain.
func LoadGpumemd(path string) (Gpumemd, error) { return gpumemdSection.load(path) }

// ParseGpumemd reads the [gpumemd] section of an INI document.
func ParseGpumemd(b []byte) (Gpumemd, error) { return gpumemdSection.parse(b) }

var gpumemdSection = sectionOf("gpumemd", gpumemdKeys)

// GpumemdKeys are the [gpumemd] keys, each with the gpumemd flag that sets it.
func GpumemdKeys() []Key[Gpumemd] { return gpumemdKeys }

// DefaultInventoryDir is where the per-node inventory files are, for the plugins
// (InventoryPath) and gpumemd (InventoryDir) alike.
const DefaultInventoryDir = "/etc/slurm/gpumem.d"

type gk = Key[Gpumemd]

// gpumemdKeys: one row per key, in the order the error for an unknown key lists them.
var gpumemdKeys = []gk{
	text("NVML", "nvml", "real", "NVML backend", func(c *Gpumemd) *string { return &c.NVML }, nonEmpty),
	text("Listen", "listen", "127.0.0.1:9402", "address for /metrics and /api (HOST:PORT or :PORT); loopback by default, :9402 for a Prometheus elsewhere",
		func(c *Gpumemd) *string { return &c.Listen }, ParseListen),
	boolean("APIPublic", "api-public", "no", "serve /api (per-job history) on a non-loopback --listen without --web.config.file",
		func(c *Gpumemd) *bool { return &c.APIPublic }),
	text("WebConfigFile", "web.config.file", "", "Prometheus exporter-toolkit web config for TLS and basic auth",
		func(c *Gpumemd) *string { return &c.WebConfigFile }, optionalPath),
	text("NodeName", "node", "", "Slurm NodeName of this node (default: the short host name)", func(c *Gpumemd) *string { return &c.NodeName }, nil),
	duration("PollInterval", "poll-interval", "10s", "how often NVML is read", func(c *Gpumemd) *time.Duration { return &c.PollInterval },
		10*time.Millisecond, time.Hour),
	boolean("WriteGres", "write-gres", "no", "keep --gres-conf in step with the GPUs", func(c *Gpumemd) *bool { return &c.WriteGres }),
	text("GresConf", "gres-conf", "/etc/slurm/gres.conf", "gres.conf to write", func(c *Gpumemd) *string { return &c.GresConf }, parsePath),
	boolean("WriteInventory", "write-inventory", "no", "write this node's inventory to --inventory-dir/NODE.json for the plugins",
		func(c *Gpumemd) *bool { return &c.WriteInventory }),
	text("InventoryDir", "inventory-dir", DefaultInventoryDir, "per-node inventory directory", func(c *Gpumemd) *string { return &c.InventoryDir }, parsePath),
	duration("GresInterval", "gres-interval", "1m", "how often GPUs are re-discovered for gres.conf",
		func(c *Gpumemd) *time.Duration { return &c.GresInterval }, 10*time.Millisecond, 24*time.Hour),
	text("GresHook", "gres-hook", "", "shell command run after gres.conf changed, e.g. 'systemctl restart slurmd'",
		func(c *Gpumemd) *string { return &c.GresHook }, nil),
	text("GresDevPrefix", "dev-prefix", "", "replaces /dev in gres.conf File= lines (a lab's fake device nodes)",
		func(c *Gpumemd) *string { return &c.GresDevPrefix }, optionalPath),
	text("SlurmVersion", "slurm-version", "auto", "Slurm release gres.conf is for (22.05.8, 24.11, ...); auto asks slurmd -V",
		func(c *Gpumemd) *string { return &c.SlurmVersion }, nonEmpty),
	text("UsagePolicy", "usage-policy", "record", "what to do with a job over its slice: record, warn or kill",
		func(c *Gpumemd) *string { return &c.UsagePolicy }, ParseUsagePolicy),
	duration("UsageGrace", "usage-grace", "1m", "how long a job may stay over its slice before kill",
		func(c *Gpumemd) *time.Duration { return &c.UsageGrace }, 0, 24*time.Hour),
	boolean("UsageNotify", "usage-notify", "yes", "also tell the job through scontrol notify", func(c *Gpumemd) *bool { return &c.UsageNotify }),
	boolean("JobSummary", "job-summary", "yes", "at each job's end write what it used (needs HistoryDB) into its AdminComment in Slurm's accounting, for sacct and gpumemctl used",
		func(c *Gpumemd) *bool { return &c.JobSummary }),
	boolean("Drain", "drain", "no", "drain the node on NVML failure, a lost GPU or a critical XID", func(c *Gpumemd) *bool { return &c.Drain }),
	boolean("Resume", "resume", "no", "resume a node gpumemd drained once it is healthy", func(c *Gpumemd) *bool { return &c.Resume }),
	keyOf("CriticalXIDs", "critical-xids", "", "list", "comma-separated XIDs that drain (default: the built-in list)",
		func(c *Gpumemd) *[]int { return &c.CriticalXIDs }, ParseXIDs, showInts),
	duration("XIDHold", "xid-hold", "0s", "how long a critical XID counts as a problem; 0 until an admin resumes the node",
		func(c *Gpumemd) *time.Duration { return &c.XIDHold }, 0, 30*24*time.Hour),
	keyOf("DrainAfter", "drain-after", "3", "int", "consecutive bad polls before a drain", func(c *Gpumemd) *int { return &c.DrainAfter }, polls, strconv.Itoa),
	keyOf("ResumeAfter", "resume-after", "3", "int", "consecutive good polls before a resume", func(c *Gpumemd) *int { return &c.ResumeAfter }, polls, strconv.Itoa),
	text("HealthState", "health-state", "/var/lib/gpumem/health.json", "file that keeps held XIDs, the GPUs seen and gpumemd's drain across restarts; empty keeps nothing",
		func(c *Gpumemd) *string { return &c.HealthState }, optionalPath),
	text("Scontrol", "scontrol", "scontrol", "scontrol binary used to drain and resume, and to read what Slurm allocated each job",
		func(c *Gpumemd) *string { return &c.Scontrol }, nonEmpty),
	text("HistoryDB", "history-db", "/var/lib/gpumem/history.db", "SQLite history file; empty keeps no history",
		func(c *Gpumemd) *string { return &c.HistoryDB }, optionalPath),
	duration("HistoryBucket", "history-bucket", "1m", "one history sample per job per bucket",
		func(c *Gpumemd) *time.Duration { return &c.HistoryBucket }, time.Second, 24*time.Hour),
	duration("HistoryKeepSamples", "history-keep-samples", "168h", "how long samples are kept",
		func(c *Gpumemd) *time.Duration { return &c.HistoryKeepSamples }, time.Minute, 3650*24*time.Hour),
	duration("HistoryKeepJobs", "history-keep-jobs", "2160h", "how long ended jobs are kept",
		func(c *Gpumemd) *time.Duration { return &c.HistoryKeepJobs }, time.Minute, 3650*24*time.Hour),
	keyOf("FragmentationSizes", "fragmentation-sizes", "5G,10G,20G,40G", "sizes", "request sizes fragmentation is measured against (a bare number is MiB)",
		func(c *Gpumemd) *[]int64 { return &c.FragmentationSizesMiB }, parseSizes, showSizes),
	text("IdlePolicy", "idle-policy", "record", "what to do with a job holding GPU memory it does not use: off, record, warn, requeue or cancel",
		func(c *Gpumemd) *string { return &c.IdlePolicy }, ParseIdlePolicy),
	duration("IdleAfter", "idle-after", "30m", "how long a job may hold GPU memory idle before the idle policy acts",
		func(c *Gpumemd) *time.Duration { return &c.IdleAfter }, 0, 30*24*time.Hour),
	duration("IdleGrace", "idle-grace", "10m", "from the idle warning to requeue or cancel",
		func(c *Gpumemd) *time.Duration { return &c.IdleGrace }, 0, 30*24*time.Hour),
	keyOf("IdleUtilization", "idle-utilization", "0", "ratio", "a job with GPU processes counts as idle when its GPUs are busy less than this fraction (0: never)",
		func(c *Gpumemd) *float64 { return &c.IdleUtilization }, ParseRatio, showFloat),
	duration("IdleInterval", "idle-interval", "1m", "how often the jobs running here are listed for the idle policy",
		func(c *Gpumemd) *time.Duration { return &c.IdleInterval }, time.Second, time.Hour),
	keyOf("IdleExemptQOS", "idle-exempt-qos", "", "list", "comma-separated QOS whose jobs the idle policy never acts on",
		func(c *Gpumemd) *[]string { return &c.IdleExemptQOS }, parseNames, showNames),
	keyOf("IdleExemptAccounts", "idle-exempt-accounts", "", "list", "comma-separated accounts whose jobs the idle policy never acts on",
		func(c *Gpumemd) *[]string { return &c.IdleExemptAccounts }, parseNames, showNames),
	boolean("IdleInteractive", "idle-interactive", "no", "let the idle policy act on interactive jobs (salloc, srun) too",
		func(c *Gpumemd) *bool { return &c.IdleInteractive }),
	text("FenceCgroupRoot", "fence-cgroup-root", "/sys/fs/cgroup", "the cgroup2 mount (Slurm's CgroupMountpoint), where the dmem controller must be offered for the driver fence",
		func(c *Gpumemd) *string { return &c.FenceCgroupRoot }, parsePath),
	text("FenceCgroupScope", "fence-cgroup-scope", "", "below --fence-cgroup-root, the slurmstepd scope the job's cgroup must lie in (empty: any scope Slurm's cgroup/v2 names *slurmstepd.scope)",
		func(c *Gpumemd) *string { return &c.FenceCgroupScope }, ParseCgroupScope),
	text("FenceFailure", "fence-failure", "fail", "when the prolog cannot set a job's driver fence: fail (the prolog fails) or drain (gpumemd's drain reason first)",
		func(c *Gpumemd) *string { return &c.FenceFailure }, ParseFenceFailure),
	text("FenceFailures", "fence-failures", "/var/lib/gpumem/fence-failures.log", "file that counts failed driver fences, one line each; empty counts nowhere",
		func(c *Gpumemd) *string { return &c.FenceFailures }, optionalPath),
	duration("FenceTimeout", "fence-timeout", "90s", "how long the prolog may take to read the job's allocation and set its limits before it fails",
		func(c *Gpumemd) *time.Duration { return &c.FenceTimeout }, time.Second, 10*time.Minute),
	text("FenceState", "fence-state", "/run/gpumem/fence", "directory where the prolog records each job's fence for the task prolog",
		func(c *Gpumemd) *string { return &c.FenceState }, parsePath),
}

// ParseFenceFailure checks FenceFailure: fail, or drain.
func ParseFenceFailure(v string) (string, error) {
	switch p := strings.ToLower(v); p {
	case "fail", "drain":
		return p, nil
	}
	return "", fmt.Errorf("%q; want fail (the prolog fails: Slurm drains the node and requeues the job held) or drain (gpumemd drains the node with its own reason, then the prolog fails)", v)
}

// ParseCgroupScope checks FenceCgroupScope: a relative path below the cgroup2 mount.
func ParseCgroupScope(v string) (string, error) {
	c := strings.Trim(v, "/")
	if c == "" {
		return "", nil // any scope Slurm names
	}
	if strings.Contains("/"+c+"/", "/../") || strings.Contains("/"+c+"/", "/./") || strings.Contains(c, "//") {
		return "", fmt.Errorf("%q; want a path below the cgroup2 mount such as system.slice/slurmstepd.scope", v)
	}
	return c, nil
}

// ParseIdlePolicy checks IdlePolicy.
func ParseIdlePolicy(v string) (string, error) {
	switch p := strings.ToLower(v); p {
	case "off", "record", "warn", "requeue", "cancel":
		return p, nil
	}
	return "", errors.New("want off, record, warn, requeue or cancel")
}

// ParseRatio reads a fraction from 0 to 1, or a percentage (25%).
func ParseRatio(v string) (float64, error) {
	s, pct := strings.CutSuffix(strings.TrimSpace(v), "%")
	f, err := strconv.ParseFloat(s, 64)
	if pct {
		f /= 100
	}
	if err != nil || f < 0 || f > 1 {
		return 0, errors.New("want a fraction from 0 to 1 or a percentage, e.g. 0.05 or 5%")
	}
	return f, nil
}

func parseNames(v string) ([]string, error) { return ParseList(v), nil }

func showNames(xs []string) string { return strings.Join(xs, ",") }

func showInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func showFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ParseList reads a comma-separated list of names; empty gives none.
func ParseList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseUsagePolicy checks UsagePolicy.
func ParseUsagePolicy(v string) (string, error) {
	switch p := strings.ToLower(v); p {
	case "record", "warn", "kill":
		return p, nil
	}
	return "", errors.New("want record, warn or kill")
}

// ParseListen checks a listen address such as :9402 or 127.0.0.1:9402.
func ParseListen(v string) (string, error) {
	i := strings.LastIndex(v, ":")
	if i < 0 {
		return "", errors.New("want HOST:PORT or :PORT, e.g. :9402")
	}
	if p, err := strconv.Atoi(v[i+1:]); err != nil || p < 0 || p > 65535 {
		return "", errors.New("want HOST:PORT or :PORT with a port from 0 to 65535")
	}
	return v, nil
}

// ParseXIDs reads a comma-separated list of XID numbers; empty means the built-in list.
func ParseXIDs(v string) ([]int, error) {
	if v == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 1000 {
			return nil, fmt.Errorf("%q is not an XID; want numbers such as 48,79,94", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// polls checks a count of consecutive polls: 1 (act at once) to 100.
func polls(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil:
		return 0, errors.New("want a whole number of polls from 1 to 100")
	case n < 1 || n > 100:
		return 0, errors.New("want at least 1 poll each and at most 100")
	}
	return n, nil
}

func nonEmpty(v string) (string, error) {
	if v == "" {
		return "", errors.New("empty")
	}
	return v, nil
}

func optionalPath(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	return parsePath(v)
}
