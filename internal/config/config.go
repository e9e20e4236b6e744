// Package config reads /etc/slurm/gpumem.conf, the INI file shared by the Slurm plugins,
// gpumemctl and gpumemd. Top-level keys (before any [section]) are the ones every part
// reads; a part with settings of its own keeps them in a section of its own name.
//
// Reading never fails hard: every key that is missing or wrong keeps its safe default,
// and all problems come back together in one error, so a broken file inside slurmctld
// is logged and survived, never fatal.
package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/units"
)

// DefaultPath is where Slurm's own configuration lives on Debian.
const DefaultPath = "/etc/slurm/gpumem.conf"

// PathEnv names the environment variable that points the plugins, gpumemd and
// gpumemctl at another gpumem.conf (a test lab's, without touching /etc).
const PathEnv = "GPUMEM_CONF"

// Path is the gpumem.conf every gpumem component reads unless told otherwise:
// $GPUMEM_CONF, else DefaultPath.
func Path() string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	return DefaultPath
}

// OnError says what the client plugin (cli_filter) does when it cannot decide a gpu:mem
// request (no inventory, a broken gpumem.conf): Open leaves the options for job_submit to
// translate, Closed stops the command. job_submit never passes a gpu:mem job untranslated.
type OnError string

const (
	Open   OnError = "open"
	Closed OnError = "closed"
)

// Level orders log verbosity; a message is logged when its level <= the configured one.
type Level int

const (
	LevelError Level = iota
	LevelInfo
	LevelVerbose
	LevelDebug
)

var levelNames = []string{"error", "info", "verbose", "debug"}

func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// Config is everything the plugins need. Zero values are never used: start from Default.
type Config struct {
	ShardUnitMiB    int64         // GPU memory one Slurm shard stands for
	PlacementPolicy string        // the placement policy the core chooses by (its name, checked by the core)
	PreferMIG       bool          // a request that a MIG instance holds goes to MIG first
	InventoryPath   string        // JSON file or directory of per-node JSON files
	SlurmConf       string        // slurm.conf, for the default partition
	OnError         OnError       // what to do when gpumem itself fails
	LogLevel        Level         // how much goes to the Slurm log
	ReloadInterval  time.Duration // the inventory is looked at no more often than this
	Pools           []Pool        // size-based routing of jobs that name no partition
	TargetSizesMiB  []int64       // sizes fgd and gpumem keep room for; empty: the core's default
	ShardTypes      ShardTypes    // per-gpu: a shard Type per GPU, and shard jobs pinned to one
	PinPolicy       string        // the placement policy that picks a pinned shard job's GPU
	UsageSnapshot   string        // running and pinned shards per GPU, written by gpumemctl steer
	UsageMaxAge     time.Duration // an older snapshot is not trusted: jobs are then not pinned
	RefusalCounts   string        // where job_submit writes its refusal counts for gpumemctl exporter; "none": nowhere
	Fence           Fence         // whether shard slices need a memory fence on their GPU
}

// ShardTypes says whether gres.conf gives each shared GPU's shards a Type of their own.
type ShardTypes string

const (
	// ShardTypesNone: untyped shards, Slurm picks the GPU inside the node (the default).
	ShardTypesNone ShardTypes = "none"
	// ShardTypesPerGPU: each shared GPU's shards carry the Type shard.TypeName names,
	// so a job can be pinned to one GPU with shard:<type>:N.
	ShardTypesPerGPU ShardTypes = "per-gpu"
)

// Default is the configuration used for every key the file does not set correctly: each
// top-level key's Default.
func Default() Config { return defaults(topKeys) }

// Load reads path. A missing file is not an error (Default applies); an unreadable or
// broken one returns Default for what could not be read, and the error.
func Load(path string) (Config, error) { return topLevel.load(path) }

// Parse reads the top-level keys of an INI document. Unknown top-level keys are errors
// (a typo must not silently fall back to a default); sections are left to their owners.
func Parse(b []byte) (Config, error) { return topLevel.parse(b) }

var topLevel = sectionOf("", topKeys).renaming(renamed)

// renamed are the keys that had another name: the old name (lower case) still sets the
// key, deprecated.
var renamed = map[string]string{
	// Policy was the placement policy's key beside PinPolicy, UsagePolicy and
	// IdlePolicy, which are not it.
	"policy": "PlacementPolicy",
}

type tk = Key[Config]

// topKeys: one row per top-level key (read in any case: ShardUnit, shardunit and
// SHARDUNIT all work), in the order the error for an unknown key lists them. A
// top-level key is no flag: the plugins read it, and each command that takes one of
// them as a flag names its own.
var topKeys = []tk{
	setting("ShardUnit", strconv.FormatInt(shard.DefaultUnitMiB, 10), func(c *Config) *int64 { return &c.ShardUnitMiB }, parseSize),
	setting("PlacementPolicy", "first-fit", func(c *Config) *string { return &c.PlacementPolicy }, parsePolicy),
	setting("PreferMIG", "no", func(c *Config) *bool { return &c.PreferMIG }, parseBool),
	setting("InventoryPath", DefaultInventoryDir, func(c *Config) *string { return &c.InventoryPath }, parsePath),
	setting("SlurmConf", "/etc/slurm/slurm.conf", func(c *Config) *string { return &c.SlurmConf }, parsePath),
	setting("OnError", string(Open), func(c *Config) *OnError { return &c.OnError }, parseOnError),
	setting("LogLevel", LevelInfo.String(), func(c *Config) *Level { return &c.LogLevel }, parseLevel),
	setting("ReloadInterval", "10s", func(c *Config) *time.Duration { return &c.ReloadInterval }, durationIn(0, time.Hour)),
	setting("Pools", "", func(c *Config) *[]Pool { return &c.Pools }, parsePools),
	setting("TargetSizes", "", func(c *Config) *[]int64 { return &c.TargetSizesMiB }, parseTargetSizes),
	setting("ShardTypes", string(ShardTypesNone), func(c *Config) *ShardTypes { return &c.ShardTypes }, parseShardTypes),
	setting("PinPolicy", "gpumem", func(c *Config) *string { return &c.PinPolicy }, parsePolicy),
	setting("UsageSnapshot", "/var/lib/gpumem/usage.json", func(c *Config) *string { return &c.UsageSnapshot }, parsePath),
	setting("UsageMaxAge", "30s", func(c *Config) *time.Duration { return &c.UsageMaxAge }, durationIn(units.AboveZero, time.Hour)),
	setting("RefusalCounts", "/var/lib/gpumem/refusals.json", func(c *Config) *string { return &c.RefusalCounts }, parsePathOrNone),
	setting("Fence", string(FenceOff), func(c *Config) *Fence { return &c.Fence }, parseFence),
}

// assign stores a parsed value only when it is good, so a bad key keeps its default.
func assign[T any](dst *T, v string, parse func(string) (T, error)) error {
	x, err := parse(v)
	if err == nil {
		*dst = x
	}
	return err
}

func parsePolicy(v string) (string, error) {
	if v == "" {
		return "", errors.New("empty; want a policy name such as first-fit or best-fit")
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return "", errors.New("want a lower-case policy name such as first-fit or best-fit")
		}
	}
	return v, nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	// t and f too, so that every value a gpumemd flag took before it was read by
	// this parser (Go's strconv.ParseBool) is still taken.
	case "yes", "true", "on", "1", "t":
		return true, nil
	case "no", "false", "off", "0", "f":
		return false, nil
	}
	return false, errors.New("want yes or no")
}

func parsePath(v string) (string, error) {
	if !strings.HasPrefix(v, "/") {
		return "", errors.New("want an absolute path")
	}
	return v, nil
}

// parsePathOrNone is parsePath, or "none" (any case) for a file not written at all.
func parsePathOrNone(v string) (string, error) {
	if strings.EqualFold(v, "none") {
		return "none", nil
	}
	if _, err := parsePath(v); err != nil {
		return "", errors.New("want an absolute path, or none")
	}
	return v, nil
}

func parseOnError(v string) (OnError, error) {
	switch o := OnError(strings.ToLower(v)); o {
	case Open, Closed:
		return o, nil
	}
	return "", errors.New("want open (pass the job unchanged) or closed (refuse it)")
}

func parseLevel(v string) (Level, error) {
	for i, n := range levelNames {
		if strings.EqualFold(v, n) {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("want one of %s", strings.Join(levelNames, ", "))
}

// parseTargetSizes reads a list such as 5g,10g,20g; empty keeps the core's default.
func parseTargetSizes(v string) ([]int64, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	return parseSizes(v)
}

func parseShardTypes(v string) (ShardTypes, error) {
	switch t := ShardTypes(strings.ToLower(v)); t {
	case ShardTypesNone, ShardTypesPerGPU:
		return t, nil
	}
	return "", errors.New("want none (untyped shards) or per-gpu (a shard Type per GPU, jobs pinned to one)")
}
