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
	FenceCgroupRoot  string // the cgroup2 mount (Slurm's CgroupMountpoint)
	FenceCgroupScope string // below it, the directory that holds job_ID
	FenceFailure     string // fail (the prolog fails) or drain (gpumemd's reason first, then fail)
	FenceFailures    string // file that counts failed fences, one line each; "" counts nowhere
	FenceState       string // directory of one file per fenced job naming its fence, for the TaskProlog
}

// DefaultGpumemd is what gpumemd runs with when neither file nor flag says otherwise:
// it measures and reports, and changes nothing in Slurm until told to.
func DefaultGpumemd() Gpumemd {
	return Gpumemd{
		NVML:                  "real",
		Listen:                "127.0.0.1:9402",
		PollInterval:          10 * time.Second,
		GresConf:              "/etc/slurm/gres.conf",
		InventoryDir:          Default().InventoryPath,
		GresInterval:          time.Minute,
		SlurmVersion:          "auto",
		UsagePolicy:           "record",
		UsageGrace:            time.Minute,
		UsageNotify:           true,
		DrainAfter:            3,
		ResumeAfter:           3,
		HealthState:           "/var/lib/gpumem/health.json",
		Scontrol:              "scontrol",
		HistoryDB:             "/var/lib/gpumem/history.db",
		HistoryBucket:         time.Minute,
		HistoryKeepSamples:    7 * 24 * time.Hour,
		HistoryKeepJobs:       90 * 24 * time.Hour,
		FragmentationSizesMiB: []int64{5 << 10, 10 << 10, 20 << 10, 40 << 10},
		IdlePolicy:            "record",
		IdleAfter:             30 * time.Minute,
		IdleGrace:             10 * time.Minute,
		IdleInterval:          time.Minute,
		FenceCgroupRoot:       "/sys/fs/cgroup",
		FenceCgroupScope:      "system.slice/slurmstepd.scope",
		FenceFailure:          "fail",
		FenceFailures:         "/var/lib/gpumem/fence-failures.log",
		FenceState:            "/run/gpumem/fence",
	}
}

// LoadGpumemd reads the [gpumemd] section of path; a missing file gives the defaults.
// Unlike the plugins' keys, a bad key here is returned as an error for gpumemd to stop
// on: a sidecar that silently ignored "Drain = yse" would never drain.
func LoadGpumemd(path string) (Gpumemd, error) { return gpumemdSection.load(path) }

// ParseGpumemd reads the [gpumemd] section of an INI document.
func ParseGpumemd(b []byte) (Gpumemd, error) { return gpumemdSection.parse(b) }

var gpumemdSection = section[Gpumemd]{name: "gpumemd", def: DefaultGpumemd, setters: gpumemdSetters,
	known: func() string { return gpumemdKeys }}

const gpumemdKeys = "NVML, Listen, APIPublic, WebConfigFile, NodeName, PollInterval, WriteGres, GresConf, " +
	"WriteInventory, InventoryDir, GresInterval, GresHook, GresDevPrefix, SlurmVersion, UsagePolicy, UsageGrace, UsageNotify, " +
	"Drain, Resume, CriticalXIDs, XIDHold, DrainAfter, ResumeAfter, HealthState, Scontrol, HistoryDB, HistoryBucket, HistoryKeepSamples, " +
	"HistoryKeepJobs, FragmentationSizes, IdlePolicy, IdleAfter, IdleGrace, IdleUtilization, IdleInterval, IdleExemptQOS, " +
	"IdleExemptAccounts, IdleInteractive, FenceCgroupRoot, FenceCgroupScope, FenceFailure, FenceFailures, FenceState"

var gpumemdSetters = map[string]func(*Gpumemd, string) error{
	"nvml":          func(c *Gpumemd, v string) error { return assign(&c.NVML, v, nonEmpty) },
	"listen":        func(c *Gpumemd, v string) error { return assign(&c.Listen, v, ParseListen) },
	"apipublic":     func(c *Gpumemd, v string) error { return assign(&c.APIPublic, v, parseBool) },
	"webconfigfile": func(c *Gpumemd, v string) error { return assign(&c.WebConfigFile, v, optionalPath) },
	"nodename":      func(c *Gpumemd, v string) error { c.NodeName = v; return nil },
	"pollinterval": func(c *Gpumemd, v string) error {
		return assign(&c.PollInterval, v, durationIn(time.Second, time.Hour))
	},
	"writegres":      func(c *Gpumemd, v string) error { return assign(&c.WriteGres, v, parseBool) },
	"gresconf":       func(c *Gpumemd, v string) error { return assign(&c.GresConf, v, parsePath) },
	"writeinventory": func(c *Gpumemd, v string) error { return assign(&c.WriteInventory, v, parseBool) },
	"inventorydir":   func(c *Gpumemd, v string) error { return assign(&c.InventoryDir, v, parsePath) },
	"gresinterval": func(c *Gpumemd, v string) error {
		return assign(&c.GresInterval, v, durationIn(time.Second, 24*time.Hour))
	},
	"greshook":      func(c *Gpumemd, v string) error { c.GresHook = v; return nil },
	"gresdevprefix": func(c *Gpumemd, v string) error { return assign(&c.GresDevPrefix, v, optionalPath) },
	"slurmversion":  func(c *Gpumemd, v string) error { return assign(&c.SlurmVersion, v, nonEmpty) },
	"usagepolicy":   func(c *Gpumemd, v string) error { return assign(&c.UsagePolicy, v, ParseUsagePolicy) },
	"usagegrace":    func(c *Gpumemd, v string) error { return assign(&c.UsageGrace, v, durationIn(0, 24*time.Hour)) },
	"usagenotify":   func(c *Gpumemd, v string) error { return assign(&c.UsageNotify, v, parseBool) },
	"drain":         func(c *Gpumemd, v string) error { return assign(&c.Drain, v, parseBool) },
	"resume":        func(c *Gpumemd, v string) error { return assign(&c.Resume, v, parseBool) },
	"criticalxids":  func(c *Gpumemd, v string) error { return assign(&c.CriticalXIDs, v, ParseXIDs) },
	"xidhold":       func(c *Gpumemd, v string) error { return assign(&c.XIDHold, v, durationIn(0, 30*24*time.Hour)) },
	"drainafter":    func(c *Gpumemd, v string) error { return assign(&c.DrainAfter, v, polls) },
	"resumeafter":   func(c *Gpumemd, v string) error { return assign(&c.ResumeAfter, v, polls) },
	"healthstate":   func(c *Gpumemd, v string) error { return assign(&c.HealthState, v, optionalPath) },
	"scontrol":      func(c *Gpumemd, v string) error { return assign(&c.Scontrol, v, nonEmpty) },
	"historydb":     func(c *Gpumemd, v string) error { return assign(&c.HistoryDB, v, optionalPath) },
	"historybucket": func(c *Gpumemd, v string) error {
		return assign(&c.HistoryBucket, v, durationIn(time.Second, 24*time.Hour))
	},
	"historykeepsamples": func(c *Gpumemd, v string) error {
		return assign(&c.HistoryKeepSamples, v, durationIn(time.Minute, 3650*24*time.Hour))
	},
	"historykeepjobs": func(c *Gpumemd, v string) error {
		return assign(&c.HistoryKeepJobs, v, durationIn(time.Minute, 3650*24*time.Hour))
	},
	"fragmentationsizes": func(c *Gpumemd, v string) error { return assign(&c.FragmentationSizesMiB, v, parseSizes) },
	"idlepolicy":         func(c *Gpumemd, v string) error { return assign(&c.IdlePolicy, v, ParseIdlePolicy) },
	"idleafter":          func(c *Gpumemd, v string) error { return assign(&c.IdleAfter, v, durationIn(0, 30*24*time.Hour)) },
	"idlegrace":          func(c *Gpumemd, v string) error { return assign(&c.IdleGrace, v, durationIn(0, 30*24*time.Hour)) },
	"idleutilization":    func(c *Gpumemd, v string) error { return assign(&c.IdleUtilization, v, ParseRatio) },
	"idleinterval": func(c *Gpumemd, v string) error {
		return assign(&c.IdleInterval, v, durationIn(time.Second, time.Hour))
	},
	"idleexemptqos":      func(c *Gpumemd, v string) error { c.IdleExemptQOS = ParseList(v); return nil },
	"idleexemptaccounts": func(c *Gpumemd, v string) error { c.IdleExemptAccounts = ParseList(v); return nil },
	"idleinteractive":    func(c *Gpumemd, v string) error { return assign(&c.IdleInteractive, v, parseBool) },
	"fencecgrouproot":    func(c *Gpumemd, v string) error { return assign(&c.FenceCgroupRoot, v, parsePath) },
	"fencecgroupscope":   func(c *Gpumemd, v string) error { return assign(&c.FenceCgroupScope, v, ParseCgroupScope) },
	"fencefailure":       func(c *Gpumemd, v string) error { return assign(&c.FenceFailure, v, ParseFenceFailure) },
	"fencefailures":      func(c *Gpumemd, v string) error { return assign(&c.FenceFailures, v, optionalPath) },
	"fencestate":         func(c *Gpumemd, v string) error { return assign(&c.FenceState, v, parsePath) },
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
	if c == "" || strings.Contains("/"+c+"/", "/../") || strings.Contains("/"+c+"/", "/./") || strings.Contains(c, "//") {
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
	if err != nil || n < 1 || n > 100 {
		return 0, errors.New("want a number of polls from 1 to 100")
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
