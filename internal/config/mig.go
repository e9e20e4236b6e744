package config

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/units"
)

// MIG is the [mig] section of gpumem.conf: where desired MIG layouts live, whether
// gpumemd applies them and how, and how gpumemctl mig plan shares out the GPUs. Each
// key is also a flag (gpumemd --mig-*, gpumemctl mig ...), which wins over the file.
type MIG struct {
	Desired     string        // directory of desired-layout files (NODE.json); "" leaves MIG alone
	Apply       bool          // gpumemd really repartitions; no: it only logs the steps
	Journal     string        // the apply's journal, so a restart finishes or rolls it back
	IdleTimeout time.Duration // how long an apply waits for the drained node's jobs
	RetryAfter  time.Duration // the wait after a failed apply; it doubles with each failure in a row
	Reload      string        // command run after the new gres.conf, before Slurm is told the node's count
	KeepWhole   float64       // share of MIG GPUs a plan keeps as one full instance
}

// DefaultMIG changes nothing: no desired layouts, no apply.
func DefaultMIG() MIG { return defaults(migKeys) }

// LoadMIG reads the [mig] section of path; a missing file gives the defaults. A bad key
// is an error, as for [gpumemd]: an apply must not run on a setting nobody meant.
func LoadMIG(path string) (MIG, error) { return migSection.load(path) }

// ParseMIG reads the [mig] section of an INI document.
func ParseMIG(b []byte) (MIG, error) { return migSection.parse(b) }

var migSection = sectionOf("mig", migKeys)

// MIGKeys are the [mig] keys, with the gpumemd flags that set them (KeepWhole is
// gpumemctl mig plan's alone: Flag "").
func MIGKeys() []Key[MIG] { return migKeys }

var migKeys = []Key[MIG]{
	text("Desired", "mig-desired", "", "directory of desired MIG layout files (NODE.json, from gpumemctl mig plan --out); empty leaves MIG alone",
		func(c *MIG) *string { return &c.Desired }, optionalPath),
	boolean("Apply", "mig-apply", "no", "really repartition this node's GPUs to --mig-desired (drain, wait, apply, resume); without it the steps are only logged",
		func(c *MIG) *bool { return &c.Apply }),
	text("Journal", "mig-journal", "/var/lib/gpumem/mig-journal.json", "journal of a MIG apply, so a restart finishes or rolls it back",
		func(c *MIG) *string { return &c.Journal }, parsePath),
	keyOf("IdleTimeout", "mig-idle-timeout", "10m", "duration", "how long a MIG apply waits for the node's jobs before it gives up and resumes the node",
		func(c *MIG) *time.Duration { return &c.IdleTimeout }, ParseIdleTimeout, units.FormatFlagDuration),
	duration("RetryAfter", "mig-retry-after", "30s", "how long gpumemd waits before it tries a failed MIG apply again; the wait doubles with each failure in a row, up to 30m",
		func(c *MIG) *time.Duration { return &c.RetryAfter }, time.Second, 30*time.Minute),
	text("Reload", "mig-reload", "", "shell command run after a MIG apply rewrote gres.conf, to make slurmd and slurmctld read it (e.g. 'systemctl restart slurmd && scontrol reconfigure')",
		func(c *MIG) *string { return &c.Reload }, nil),
	keyOf("KeepWhole", "", "0.25", "share", "share of MIG GPUs a plan keeps as one full instance",
		func(c *MIG) *float64 { return &c.KeepWhole }, ParseShare, showFloat),
}

// ParseIdleTimeout reads IdleTimeout, for gpumemctl mig apply --idle-timeout too: 1s to
// 168h.
func ParseIdleTimeout(v string) (time.Duration, error) {
	return units.DurationIn(v, time.Second, 7*24*time.Hour)
}

// ParseShare reads a share from 0 to 1, e.g. 0.25.
func ParseShare(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1 || f != f {
		return 0, errors.New("want a share from 0 to 1, e.g. 0.25")
	}
	return f, nil
}
