// Command nfpm builds gpumem's deb and rpm packages with nFPM, from what
// packaging/build.sh gathered: a module of its own, so the packaging library is a build
// tool and never one of gpumemd's or gpumemctl's dependencies.
//
//	go -C packaging/nfpm run . -top DIR -bin DIR -gen DIR -version V -out DIR \
//	    -plugins 22.05=DIR -plugins 24.11=DIR ... [-formats deb,rpm]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

type pluginFlag map[string]string

func (p pluginFlag) String() string { return fmt.Sprint(map[string]string(p)) }
func (p pluginFlag) Set(v string) error {
	rel, dir, ok := strings.Cut(v, "=")
	if !ok || rel == "" || dir == "" {
		return fmt.Errorf("%q: want RELEASE=DIR such as 24.11=build/plugins/24.11", v)
	}
	var maj, min int
	if n, err := fmt.Sscanf(rel, "%d.%d", &maj, &min); err != nil || n != 2 || fmt.Sprintf("%d.%02d", maj, min) != rel {
		return fmt.Errorf("slurm release %q: want MAJOR.MINOR such as 24.11", rel)
	}
	p[rel] = dir
	return nil
}

func main() {
	in := inputs{plugins: pluginFlag{}}
	formats := "deb,rpm"
	out := "dist"
	flag.StringVar(&in.top, "top", "../..", "the repository's top folder")
	flag.StringVar(&in.bin, "bin", "", "folder holding gpumemd and gpumemctl")
	flag.StringVar(&in.gen, "gen", "", "folder holding man/*.1.gz and completions/")
	flag.StringVar(&in.version, "version", "", "package version (packaging/version.sh --deb)")
	flag.Var(pluginFlag(in.plugins), "plugins", "RELEASE=DIR: the plugins built for one Slurm release (repeat)")
	flag.StringVar(&formats, "formats", formats, "package formats, comma-separated (deb, rpm)")
	flag.StringVar(&out, "out", out, "folder the packages are written to")
	flag.Parse()
	if in.bin == "" || in.gen == "" || in.version == "" {
		fmt.Fprintln(os.Stderr, "nfpm: -bin, -gen and -version are required")
		os.Exit(2)
	}
	if err := run(in, strings.Split(formats, ","), out); err != nil {
		fmt.Fprintln(os.Stderr, "nfpm:", err)
		os.Exit(1)
	}
}

func run(in inputs, formats []string, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, format := range formats {
		l, ok := layouts[format]
		if !ok {
			return fmt.Errorf("format %q: want deb or rpm", format)
		}
		pkgr, err := nfpm.Get(format)
		if err != nil {
			return err
		}
		// Fresh definitions per format: the packagers fill in defaults of their own.
		infos, err := in.packages(l)
		if err != nil {
			return err
		}
		for _, info := range infos {
			info = nfpm.WithDefaults(info)
			if err := nfpm.PrepareForPackager(info, format); err != nil {
				return fmt.Errorf("%s %s: %w", info.Name, format, err)
			}
			path := filepath.Join(out, pkgr.ConventionalFileName(info))
			if err := write(pkgr, info, path); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			fmt.Println("built", path)
		}
	}
	return nil
}

func write(pkgr nfpm.Packager, info *nfpm.Info, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
