package plugin

import (
	"errors"
	"os"

	"github.com/gpumem/gpumem/internal/slurmconf"
)

// DefaultPartition returns the partition slurm.conf marks Default=YES (the last one, as
// slurmctld reads it), or "" when none is or there is no slurm.conf. slurmctld fills in the default partition only after
// job_submit has run, so the plugin must know it itself to admit a job that names no
// partition against the right nodes.
func DefaultPartition(slurmConf string) (string, error) {
	c, err := slurmconf.ParseFile(slurmConf)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return c.DefaultPartition(), nil
}
