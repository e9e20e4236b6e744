package slurmconf

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

// PlugStackPath is the SPANK configuration Slurm reads for conf (slurm.conf at
// confPath): PlugStackConfig, else plugstack.conf beside slurm.conf (Slurm's
// get_extra_conf_path).
func PlugStackPath(conf *Conf, confPath string) string {
	if p := conf.Params["plugstackconfig"]; p != "" {
		return p
	}
	return filepath.Join(filepath.Dir(confPath), "plugstack.conf")
}

// RequiresSpank reports whether the SPANK configuration at path loads a plugin whose
// file is named base as "required" (an "optional" plugin that fails to load lets jobs run
// without it, so it promises nothing), following "include" lines as Slurm does (globs,
// relative to the including file's folder), within ParseFile's bounds on size and files.
func RequiresSpank(path, base string) (bool, error) {
	budget, files := int64(MaxBytes), 0
	var walk func(path string, depth int) (bool, error)
	walk = func(path string, depth int) (bool, error) {
		if depth > maxIncludeDepth {
			return false, fmt.Errorf("%s: includes nested deeper than %d", path, maxIncludeDepth)
		}
		if files++; files > maxFiles {
			return false, fmt.Errorf("%s: more than %d files", path, maxFiles)
		}
		b, err := atomicfile.ReadCapped(path, budget)
		if err != nil {
			return false, err
		}
		budget -= int64(len(b))
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch strings.ToLower(f[0]) {
			case "required":
				if filepath.Base(f[1]) == base {
					return true, nil
				}
			case "include":
				pat := f[1]
				if !filepath.IsAbs(pat) {
					pat = filepath.Join(filepath.Dir(path), pat)
				}
				names, err := filepath.Glob(pat)
				if err != nil {
					return false, fmt.Errorf("%s: include %q: %w", path, f[1], err)
				}
				for _, n := range names {
					if ok, err := walk(n, depth+1); ok || err != nil {
						return ok, err
					}
				}
			}
		}
		return false, nil
	}
	return walk(path, 0)
}
