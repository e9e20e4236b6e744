package main

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
)

// pluginRelease is the Slurm release a plugin was built for, read from its own
// plugin_version symbol (SLURM_VERSION_NUMBER at build time, 0xMMmmuu): "24.11.5".
//
// slurmctld loads a job_submit or cli_filter plugin only when that number equals its
// own exactly, micro release included (src/common/plugin.c compares all three bytes;
// only SPANK plugins are held to major.minor), and cannot start without the plugins
// slurm.conf names. So a package of them depends on exactly that release.
func pluginRelease(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range syms {
		if s.Name != "plugin_version" || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if s.Size != 4 || s.Value < sec.Addr || s.Value+4 > sec.Addr+sec.Size || sec.Type == elf.SHT_NOBITS {
			return "", fmt.Errorf("%s: plugin_version is not a 4-byte constant", path)
		}
		b := make([]byte, 4)
		if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
			return "", fmt.Errorf("%s: plugin_version: %w", path, err)
		}
		n := binary.LittleEndian.Uint32(b)
		return fmt.Sprintf("%d.%02d.%d", n>>16&0xff, n>>8&0xff, n&0xff), nil
	}
	return "", fmt.Errorf("%s: no plugin_version symbol: not a Slurm plugin", path)
}

// slurmDepends is what a plugins package built for exact (24.11.5) requires of Slurm,
// given the release the package is named for (24.11), which exact must be of.
func slurmDepends(format, rel, exact string) ([]string, error) {
	var maj, min, mic int
	if _, err := fmt.Sscanf(exact, "%d.%d.%d", &maj, &min, &mic); err != nil || !strings.HasPrefix(exact, rel+".") {
		return nil, fmt.Errorf("plugins for Slurm %s were built for Slurm %s", rel, exact)
	}
	next := fmt.Sprintf("%d.%02d.%d", maj, min, mic+1)
	if format == "deb" {
		// "~" sorts before anything: 24.11.5~rc1 and 24.11.5-1+deb13u1 are both 24.11.5.
		return []string{fmt.Sprintf("slurm-client (>= %s~)", exact), fmt.Sprintf("slurm-client (<< %s~)", next)}, nil
	}
	return []string{"slurm >= " + exact, "slurm < " + next}, nil
}
