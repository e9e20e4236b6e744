package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"
)

// inputs is what a package set is made from: the built binaries, one folder of plugins
// per Slurm release, the generated man pages and completions, and the source tree.
type inputs struct {
	top     string            // the repository: licenses, docs, packaging/
	bin     string            // gpumemd and gpumemctl
	gen     string            // man/ and completions/ written by gpumemctl
	plugins map[string]string // Slurm release (24.11) -> folder with both .so
	version string            // packaging/version.sh --deb
}

// layout is where a distribution family puts what differs between deb and rpm.
type layout struct {
	format, pluginDir, unitDir, envDir, zshDir string
}

var layouts = map[string]layout{
	// Debian's slurm-wlm loads plugins from its multiarch folder; its units live in /lib.
	"deb": {"deb", "/usr/lib/x86_64-linux-gnu/slurm-wlm", "/lib/systemd/system", "/etc/default", "/usr/share/zsh/vendor-completions"},
	// SchedMD's slurm.spec (and EPEL's) put plugins in /usr/lib64/slurm.
	"rpm": {"rpm", "/usr/lib64/slurm", "/usr/lib/systemd/system", "/etc/sysconfig", "/usr/share/zsh/site-functions"},
}

const maintainer = "gpumem maintainers <gpumem@localhost>"

// pluginsName is the package of the plugins built for one Slurm release.
func pluginsName(rel string) string { return "gpumem-plugins-" + rel }

// releases are the plugin sets' Slurm releases, in order.
func (in inputs) releases() []string {
	var r []string
	for rel := range in.plugins {
		r = append(r, rel)
	}
	sort.Strings(r)
	return r
}

// docFiles are the files every package carries under /usr/share/doc/NAME: gpumem's
// license and notices (Apache-2.0 section 4) and each dependency's own.
func (in inputs) docFiles(name string) files.Contents {
	var c files.Contents
	for _, f := range []string{"LICENSE", "NOTICE", "THIRD_PARTY_NOTICES.md", "packaging/copyright", "CHANGELOG.md", "SECURITY.md"} {
		c = append(c, file(filepath.Join(in.top, f), "/usr/share/doc/"+name+"/"+filepath.Base(f), 0o644))
	}
	return c
}

func file(src, dst string, mode os.FileMode) *files.Content {
	return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode}}
}

func config(src, dst string) *files.Content {
	c := file(src, dst, 0o644)
	c.Type = files.TypeConfigNoReplace
	return c
}

// scripts are a package's maintainer scripts from packaging/scripts/NAME.{postinst,...};
// each one handles both dpkg's and rpm's arguments.
func (in inputs) scripts(name string) nfpm.Scripts {
	s := nfpm.Scripts{}
	for _, p := range []struct {
		ext string
		to  *string
	}{{"postinst", &s.PostInstall}, {"prerm", &s.PreRemove}, {"postrm", &s.PostRemove}} {
		f := filepath.Join(in.top, "packaging/scripts", name+"."+p.ext)
		if _, err := os.Stat(f); err == nil {
			*p.to = f
		}
	}
	return s
}

// packages are the packages of one format: one per role, so a compute node, the
// controller and a login node each install only what runs there.
func (in inputs) packages(l layout) ([]*nfpm.Info, error) {
	var out []*nfpm.Info
	rels := in.releases()
	for _, rel := range rels {
		name := pluginsName(rel)
		exact, err := pluginRelease(filepath.Join(in.plugins[rel], "job_submit_gpumem.so"))
		if err != nil {
			return nil, err
		}
		// slurm-client is on the controller (slurmctld depends on it) and on every login
		// node: the two places these plugins are loaded.
		depends, err := slurmDepends(l.format, rel, exact)
		if err != nil {
			return nil, err
		}
		var conflicts []string
		for _, other := range rels {
			if other != rel {
				conflicts = append(conflicts, pluginsName(other)) // the same two files
			}
		}
		conflicts = append(conflicts, "gpumem") // the single package before the split
		so := []string{filepath.Join(in.plugins[rel], "job_submit_gpumem.so"), filepath.Join(in.plugins[rel], "cli_filter_gpumem.so"),
			filepath.Join(in.plugins[rel], "spank_gpumem.so")}
		libc, err := libcDepends(l.format, so...)
		if err != nil {
			return nil, err
		}
		depends = append(depends, libc...)
		c := files.Contents{
			file(so[0], l.pluginDir+"/job_submit_gpumem.so", 0o755),
			file(so[1], l.pluginDir+"/cli_filter_gpumem.so", 0o755),
			file(so[2], l.pluginDir+"/spank_gpumem.so", 0o755),
		}
		out = append(out, &nfpm.Info{
			Name: name, Version: in.version, Section: "admin", Priority: "optional",
			Description: fmt.Sprintf("GPU-memory requests for Slurm %s: job_submit and cli_filter plugins\n"+
				"Lets users ask Slurm for GPU memory (--gres=gpu:mem:20g) instead of GPUs: the\n"+
				"job_submit/gpumem plugin (slurmctld) and cli_filter/gpumem plugin (srun,\n"+
				"sbatch, salloc) turn it into native GRES. Built for Slurm %s only: Slurm loads\n"+
				"a plugin only for the release it was built against. Install on the controller\n"+
				"and login nodes, then add JobSubmitPlugins=gpumem and CliFilterPlugins=gpumem.\n"+
				"Also holds spank_gpumem.so, the GPU memory fence's hook for GPU nodes where no\n"+
				"Prolog runs inside the job's cgroup (Slurm 22.05): see gpumemd's docs.", rel, rel),
			Overridables: nfpm.Overridables{
				Depends: depends, Conflicts: conflicts, Replaces: []string{"gpumem"},
				Contents: append(c, in.docFiles(name)...),
			},
		})
	}

	d := files.Contents{
		file(filepath.Join(in.bin, "gpumemd"), "/usr/sbin/gpumemd", 0o755),
		file(filepath.Join(in.top, "packaging/gpumemd-task-prolog"), "/usr/sbin/gpumemd-task-prolog", 0o755),
		file(filepath.Join(in.top, "packaging/gpumemd-prolog"), "/usr/sbin/gpumemd-prolog", 0o755),
		file(filepath.Join(in.top, "packaging/gpumemd-epilog"), "/usr/sbin/gpumemd-epilog", 0o755),
		file(filepath.Join(in.top, "packaging/systemd/gpumemd.service"), l.unitDir+"/gpumemd.service", 0o644),
		config(filepath.Join(in.top, "packaging/examples/gpumemd.default"), l.envDir+"/gpumemd"),
		{Destination: "/var/lib/gpumem", Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o750}},
	}
	for _, f := range []string{"packaging/examples/gpumemd.conf", "packaging/examples/web-config.yml", "slurm-conf/gpumem.conf"} {
		d = append(d, file(filepath.Join(in.top, f), "/usr/share/doc/gpumemd/examples/"+filepath.Base(f), 0o644))
	}
	d = append(d, file(filepath.Join(in.top, "docs/gpumemd.md"), "/usr/share/doc/gpumemd/gpumemd.md", 0o644))
	dman, err := in.manPages("8", "gpumemd")
	if err != nil {
		return nil, err
	}
	d = append(d, dman...)
	dlibc, err := libcDepends(l.format, filepath.Join(in.bin, "gpumemd"))
	if err != nil {
		return nil, err
	}
	out = append(out, &nfpm.Info{
		Name: "gpumemd", Version: in.version, Section: "admin", Priority: "optional",
		Description: "gpumem node sidecar for Slurm GPU nodes\n" +
			"Reads the node's GPUs through NVML and writes gres.conf and the inventory the\n" +
			"gpumem plugins place jobs by; exports Prometheus metrics, enforces per-job GPU\n" +
			"memory, drains and resumes unhealthy GPUs and keeps a history. Installed\n" +
			"stopped: enable it (systemctl enable --now gpumemd) once gpumem.conf says what\n" +
			"it may do.",
		Overridables: nfpm.Overridables{
			Depends: dlibc, Recommends: []string{"slurmd"}, Conflicts: []string{"gpumem"}, Replaces: []string{"gpumem"},
			Contents: append(d, in.docFiles("gpumemd")...), Scripts: in.scripts("gpumemd"),
		},
	})

	c := files.Contents{
		file(filepath.Join(in.bin, "gpumemctl"), "/usr/bin/gpumemctl", 0o755),
		file(filepath.Join(in.top, "packaging/gpumem-mail"), "/usr/bin/gpumem-mail", 0o755),
		file(filepath.Join(in.top, "packaging/systemd/gpumemctl-steer.service"), l.unitDir+"/gpumemctl-steer.service", 0o644),
		config(filepath.Join(in.top, "packaging/examples/gpumemctl-steer.default"), l.envDir+"/gpumemctl-steer"),
		file(filepath.Join(in.top, "packaging/systemd/gpumemctl-pull.service"), l.unitDir+"/gpumemctl-pull.service", 0o644),
		config(filepath.Join(in.top, "packaging/examples/gpumemctl-pull.default"), l.envDir+"/gpumemctl-pull"),
		file(filepath.Join(in.top, "packaging/systemd/gpumemctl-exporter.service"), l.unitDir+"/gpumemctl-exporter.service", 0o644),
		config(filepath.Join(in.top, "packaging/examples/gpumemctl-exporter.default"), l.envDir+"/gpumemctl-exporter"),
		file(filepath.Join(in.top, "docs/monitoring.md"), "/usr/share/doc/gpumemctl/monitoring.md", 0o644),
		file(filepath.Join(in.gen, "completions/gpumemctl.bash"), "/usr/share/bash-completion/completions/gpumemctl", 0o644),
		file(filepath.Join(in.gen, "completions/gpumemctl.zsh"), l.zshDir+"/_gpumemctl", 0o644),
		file(filepath.Join(in.gen, "completions/gpumemctl.fish"), "/usr/share/fish/vendor_completions.d/gpumemctl.fish", 0o644),
	}
	// Prometheus rules, their unit tests, a scrape example and the Grafana dashboard, for
	// the monitoring host; gpumemctl's exporter is one of their sources. gpumem-rules.sh
	// writes the rules for a site's own scrape job names.
	for _, f := range []string{"gpumem-rules.yml", "gpumem-rules.test.yml", "prometheus.yml", "gpumem-dashboard.json"} {
		c = append(c, file(filepath.Join(in.top, "packaging/monitoring", f), "/usr/share/gpumem/monitoring/"+f, 0o644))
	}
	c = append(c, file(filepath.Join(in.top, "packaging/monitoring/gpumem-rules.sh"), "/usr/share/gpumem/monitoring/gpumem-rules.sh", 0o755))
	cman, err := in.manPages("1", "gpumemctl")
	if err != nil {
		return nil, err
	}
	c = append(c, cman...)
	clibc, err := libcDepends(l.format, filepath.Join(in.bin, "gpumemctl"))
	if err != nil {
		return nil, err
	}
	out = append(out, &nfpm.Info{
		Name: "gpumemctl", Version: in.version, Section: "admin", Priority: "optional",
		Description: "gpumem admin CLI for Slurm clusters with shared GPUs\n" +
			"Generates gres.conf and node Gres= lines, plans and applies MIG layouts, shows\n" +
			"GPU inventory and per-job GPU memory use, simulates placement policies and\n" +
			"steers shard jobs (the gpumemctl-steer service, installed stopped) and, on a\n" +
			"configless cluster, pulls the GPU nodes' inventories to the controller (the\n" +
			"gpumemctl-pull service, installed stopped). Serves the cluster view to\n" +
			"Prometheus (the gpumemctl-exporter service, installed stopped).",
		Overridables: nfpm.Overridables{
			Depends: clibc, Recommends: []string{"slurm-client"}, Conflicts: []string{"gpumem"}, Replaces: []string{"gpumem"},
			Contents: append(c, in.docFiles("gpumemctl")...), Scripts: in.scripts("gpumemctl"),
		},
	})
	for _, p := range out {
		p.Arch = "amd64"
		p.Maintainer = maintainer
		p.Vendor = "gpumem"
		p.License = "Apache-2.0"
		p.Homepage = "https://github.com/gpumem/gpumem"
		// The version is already in each format's order (version.sh --deb), and rpm
		// accepts the same characters: nfpm must not split it as semver.
		p.VersionSchema = "none"
		p.RPM.Summary, _, _ = strings.Cut(p.Description, "\n")
	}
	return out, nil
}

// manPages are the generated manual pages of one section, which bin's own man command
// wrote, for /usr/share/man/manSECTION.
func (in inputs) manPages(section, bin string) (files.Contents, error) {
	pages, err := filepath.Glob(filepath.Join(in.gen, "man", "*."+section+".gz"))
	if err != nil || len(pages) == 0 {
		return nil, fmt.Errorf("no section %s manual pages in %s/man: run %s man first", section, in.gen, bin)
	}
	var c files.Contents
	for _, m := range pages {
		c = append(c, file(m, "/usr/share/man/man"+section+"/"+filepath.Base(m), 0o644))
	}
	return c, nil
}
