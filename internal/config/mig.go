package config

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// MIG is the [mig] section of gpumem.conf: where desired MIG layouts live, whether
// gpumemd applies them and how, and how gpumemctl mig plan shares out the GPUs. Each
// key is also a flag (gpumemd --mig-*, gpumemctl mig ...), which wins over the file.
type MIG struct {
	Desired     string        // directory of desired-layout files (NODE.json); "" leaves MIG alone
	Apply       bool          // gpumemd really repartitions; no: it only logs the steps
	Journal     string        // the apply's journal, so a restart finishes or rolls it back
	IdleTimeout time.Duration // how long an apply waits for the drained node's jobs
	Reload      string        // command run after the new gres.conf, before Slurm is told the node's count
	KeepWhole   float64       // share of MIG GPUs a plan keeps as one full instance
}

// DefaultMIG changes nothing: no desired layouts, no apply.
func DefaultMIG() MIG {
	return MIG{Journal: "/var/lib/gpumem/mig-journal.json", IdleTimeout: 10 * time.Minute, KeepWhole: 0.25}
}

// LoadMIG reads the [mig] section of path; a missing file gives the defaults. A bad key
// is an error, as for [gpumemd]: an apply must not run on a setting nobody meant.
func LoadMIG(path string) (MIG, error) { return migSection.load(path) }

// ParseMIG reads the [mig] section of an INI document.
func ParseMIG(b []byte) (MIG, error) { return migSection.parse(b) }

var migSection = section[MIG]{name: "mig", def: DefaultMIG, setters: migSetters,
	known: func() string { return "Desired, Apply, Journal, IdleTimeout, Reload, KeepWhole" }}

var migSetters = map[string]func(*MIG, string) error{
	"desired": func(c *MIG, v string) error { return assign(&c.Desired, v, optionalPath) },
	"apply":   func(c *MIG, v string) error { return assign(&c.Apply, v, parseBool) },
	"journal": func(c *MIG, v string) error { return assign(&c.Journal, v, parsePath) },
	"idletimeout": func(c *MIG, v string) error {
		return assign(&c.IdleTimeout, v, durationIn(time.Second, 7*24*time.Hour))
	},
	"reload":    func(c *MIG, v string) error { c.Reload = v; return nil },
	"keepwhole": func(c *MIG, v string) error { return assign(&c.KeepWhole, v, ParseShare) },
}

// ParseShare reads a share from 0 to 1, e.g. 0.25.
func ParseShare(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1 || f != f {
		return 0, errors.New("want a share from 0 to 1, e.g. 0.25")
	}
	return f, nil
}
