package licenses

import (
	"bufio"
	"bytes"
	_ "embed" // zig's license, for the compiler_rt zig links in
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Artifacts are what the packages ship, by the packages that build them: the binaries
// and the Slurm plugins. Only modules these link are distributed, so only they are
// listed (go list -m all also names test-only and unused modules).
var Artifacts = []Artifact{
	{Name: "binaries", Patterns: []string{"./cmd/..."}},
	{Name: "plugins", Patterns: []string{"./cgo/jobsubmit", "./cgo/clifilter"}},
}

// Artifact is a group of shipped main packages.
type Artifact struct {
	Name     string
	Patterns []string
}

// Component is one piece of third-party code in what ships: a Go module, the Go
// standard library, or code a module embeds under its own license (SQLite).
type Component struct {
	Name    string
	Version string
	UsedBy  []string // Artifact names
	Files   []File   // license and notice files, in name order
	Note    string   // how the component reaches the build, when not a plain module
}

// File is one license or notice file of a component.
type File struct {
	Name     string
	Text     string
	Licenses []string // identified licenses; empty for NOTICE and PATENTS files
	Notice   bool     // a NOTICE or PATENTS file, reproduced but not classified
}

// License is the component's license expression: the licenses of all its files, joined
// with AND because a user must comply with each.
func (c Component) License() string {
	seen := map[string]bool{}
	var ids []string
	for _, f := range c.Files {
		for _, id := range f.Licenses {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, " AND ")
}

// licenseFile matches the files a module keeps its license and notices in; THIRD_PARTY
// notices of a module are not among them, since its own dependencies are listed here
// in their own right.
var licenseFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents)([._-].*)?$`)

// embedded are files that carry another project's code under its own license inside a
// module's tree, and are compiled into the build.
var embedded = []struct {
	module, file, name string
	version            *regexp.Regexp
}{
	{"github.com/mattn/go-sqlite3", "sqlite3-binding.c", "SQLite", regexp.MustCompile(`SQLite\s+\*\*\s+version\s+(\d+\.\d+\.\d+)`)},
}

// Collect lists the third-party components of every Artifact of the Go module at root,
// with their license files read from the module cache. It fails, naming the module,
// when a module's source is not in the cache or a license file is not recognised.
func Collect(root string) ([]Component, error) {
	byName := map[string]*Component{}
	for _, a := range Artifacts {
		mods, err := linked(root, a.Patterns)
		if err != nil {
			return nil, err
		}
		for _, m := range mods {
			c := byName[m.path]
			if c == nil {
				c, err = component(m)
				if err != nil {
					return nil, err
				}
				byName[m.path] = c
				for _, e := range embedded {
					if e.module != m.path {
						continue
					}
					ec, err := embeddedComponent(m, e.file, e.name, e.version)
					if err != nil {
						return nil, err
					}
					byName[ec.Name] = ec
				}
			}
			c.UsedBy = append(c.UsedBy, a.Name)
			for _, e := range embedded {
				if e.module == m.path {
					byName[e.name].UsedBy = append(byName[e.name].UsedBy, a.Name)
				}
			}
		}
	}
	z, err := zigComponent(root)
	if err != nil {
		return nil, err
	}
	byName[z.Name] = z
	out := make([]Component, 0, len(byName))
	for _, c := range byName {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// zigRT is the name zig's compiler_rt is listed under.
const zigRT = "zig compiler_rt"

// zigLicense is zig's LICENSE, as the zig that packaging/zig.sh pins ships it: zig is
// no Go module, and the notice must not depend on zig being installed.
//
//go:embed zig/LICENSE
var zigLicense string

// zigVersion matches the zig version packaging/zig.sh requires (want="...").
var zigVersion = regexp.MustCompile(`(?m)^want="([^"]+)"`)

// zigComponent is what packaging/zig-cc, the C compiler and linker of every packaged
// binary and plugin, links into them besides their own code and the Go modules: zig's
// compiler_rt (libcompiler_rt.a, one object: the integer, float and builtin routines
// compiled code may call), under zig's MIT license. The glibc 2.28 stubs it links
// against (libc.so.6 ...) are not shipped; the start files and libc_nonshared.a members
// it builds from glibc's sources are glibc's, not zig's, and only those under glibc's
// linking exception are linked (packaging/zig-cc checks each link; the notice says so).
func zigComponent(root string) (*Component, error) {
	b, err := os.ReadFile(filepath.Join(root, "packaging", "zig.sh"))
	if err != nil {
		return nil, fmt.Errorf("zig's version: %w", err)
	}
	m := zigVersion.FindSubmatch(b)
	if m == nil {
		return nil, fmt.Errorf("packaging/zig.sh pins no zig version (want=\"...\")")
	}
	f := File{Name: "LICENSE", Text: tidy(zigLicense)}
	f.Licenses = Identify(f.Text)
	if len(f.Licenses) == 0 {
		return nil, fmt.Errorf("%s: no license recognised in internal/licenses/zig/LICENSE", zigRT)
	}
	return &Component{
		Name: zigRT, Version: string(m[1]), UsedBy: []string{"binaries", "plugins"}, Files: []File{f},
		Note: "Linked by packaging/zig-cc (zig cc, target glibc 2.28) into the packaged gpumemd, gpumemctl and " +
			"plugins (spank_gpumem.so too): libcompiler_rt.a, zig's lib/compiler_rt. The glibc 2.28 stub " +
			"libraries zig links against are not shipped.",
	}, nil
}

// stdlib is the name the Go standard library is listed under.
const stdlib = "Go standard library"

type module struct{ path, version, dir string }

// linked runs go list over the patterns for Linux with cgo on (the plugins are cgo) and
// returns every module their packages come from, the standard library as one.
func linked(root string, patterns []string) ([]module, error) {
	args := append([]string{"list", "-deps", "-f",
		`{{if .Standard}}std{{else}}{{with .Module}}{{if not .Main}}{{.Path}}	{{.Version}}	{{.Dir}}{{with .Replace}}	{{.Dir}}{{end}}{{end}}{{end}}{{end}}`},
		patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v: %s (run go mod download)", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	var mods []module
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		if line == "std" {
			dir, err := goroot(root)
			if err != nil {
				return nil, err
			}
			mods = append(mods, module{path: stdlib, dir: dir})
			continue
		}
		f := strings.Split(line, "\t")
		m := module{path: f[0], version: f[1], dir: f[2]}
		if len(f) > 3 && f[3] != "" {
			m.dir = f[3]
		}
		if m.dir == "" {
			return nil, fmt.Errorf("module %s@%s: its source is not in the module cache; run go mod download", m.path, m.version)
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].path < mods[j].path })
	return mods, nil
}

func goroot(root string) (string, error) {
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// component reads a module's license and notice files and names their licenses.
func component(m module) (*Component, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("module %s@%s: %w; run go mod download", m.path, m.version, err)
	}
	c := &Component{Name: m.path, Version: m.version}
	if m.path == stdlib {
		c.Note = "The runtime and standard packages of the Go toolchain that built the binaries."
	}
	for _, e := range entries {
		if e.IsDir() || !licenseFile.MatchString(e.Name()) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(m.dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("module %s@%s: %w", m.path, m.version, err)
		}
		f := File{Name: e.Name(), Text: tidy(string(raw))}
		up := strings.ToUpper(e.Name())
		f.Notice = strings.HasPrefix(up, "NOTICE") || strings.HasPrefix(up, "PATENTS")
		if !f.Notice {
			f.Licenses = Identify(f.Text)
			if len(f.Licenses) == 0 {
				return nil, fmt.Errorf("module %s@%s: no license recognised in %s; read it and add a rule to internal/licenses", m.path, m.version, e.Name())
			}
		}
		c.Files = append(c.Files, f)
	}
	if c.License() == "" {
		return nil, fmt.Errorf("module %s@%s: no LICENSE or COPYING file in %s", m.path, m.version, m.dir)
	}
	return c, nil
}

// embeddedComponent is code a module carries under another license: the license is
// taken from the comment block in the file that dedicates or licenses it.
func embeddedComponent(m module, file, name string, version *regexp.Regexp) (*Component, error) {
	raw, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		return nil, fmt.Errorf("module %s@%s: %w", m.path, m.version, err)
	}
	head := string(raw[:min(len(raw), 1<<16)])
	c := &Component{Name: name, Note: fmt.Sprintf("Compiled in from %s of %s.", file, m.path)}
	if v := version.FindStringSubmatch(head); v != nil {
		c.Version = v[1]
	}
	block := commentBlock(head)
	ids := Identify(block)
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s in module %s@%s: no license recognised in %s", name, m.path, m.version, file)
	}
	c.Files = []File{{Name: file, Text: block, Licenses: ids}}
	return c, nil
}

// commentBlock is the first comment paragraph that states copyright or its absence,
// without the comment markers.
func commentBlock(src string) string {
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if !strings.HasPrefix(l, "**") || strings.HasPrefix(l, "***") {
			if len(lines) > 0 {
				break
			}
			continue
		}
		body := strings.TrimPrefix(strings.TrimPrefix(l, "**"), " ")
		if len(lines) == 0 && !strings.Contains(strings.ToLower(body), "copyright") {
			continue
		}
		lines = append(lines, body)
	}
	return tidy(strings.Join(lines, "\n"))
}

// tidy makes texts compare equal across checkouts: LF line ends, no trailing blanks.
func tidy(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}
