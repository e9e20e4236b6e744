package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeTryItWithoutRoot runs each command README.md's "Try it without root" shows,
// from the repository's root as the reader does, and requires the output it pastes
// (the run time simulate reports aside), so the section never shows what gpumemctl no
// longer prints.
func TestReadmeTryItWithoutRoot(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Try it without root\n")
	if !ok {
		t.Fatal(`README.md has no "Try it without root" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	if !strings.Contains(sec, "export GPUMEM_CONF=/dev/null") {
		t.Fatal("the section does not set GPUMEM_CONF=/dev/null, which its outputs assume")
	}
	t.Setenv("GPUMEM_CONF", "/dev/null")
	t.Chdir("../..")
	// Each "    $ bin/gpumemctl ARGS" line, then its output up to the next command.
	var cmds []string
	outs := map[string]string{}
	var cur string
	for _, l := range strings.Split(sec, "\n") {
		l, indented := strings.CutPrefix(l, "    ")
		switch {
		case !indented:
			cur = ""
		case strings.HasPrefix(l, "$ bin/gpumemctl "):
			cur = strings.TrimPrefix(l, "$ bin/gpumemctl ")
			cmds = append(cmds, cur)
		case cur != "":
			outs[cur] += l + "\n"
		}
	}
	if len(cmds) < 4 {
		t.Fatalf("%d commands in the section, want gres generate, inventory, mig plan and simulate", len(cmds))
	}
	took := regexp.MustCompile(` in [0-9.]+s$`)
	trail := regexp.MustCompile(`(?m)[ \t]+$`)
	norm := func(s string) string {
		var ls []string
		for _, l := range strings.Split(strings.TrimRight(trail.ReplaceAllString(s, ""), "\n"), "\n") {
			ls = append(ls, took.ReplaceAllString(l, " in Ns"))
		}
		return strings.Join(ls, "\n")
	}
	for _, c := range cmds {
		got, err := run(t, strings.Fields(c)...)
		if err != nil {
			t.Errorf("gpumemctl %s: %v\n%s", c, err, got)
			continue
		}
		if norm(got) != norm(outs[c]) {
			t.Errorf("gpumemctl %s prints\n%s\nREADME.md shows\n%s", c, got, outs[c])
		}
	}
}

// TestReadmeMapsTheTree: README.md's layout names every Go package under internal/ (a
// package added must be placed on the map), its set-up section keeps its two commands,
// and docs/README.md links every page of docs/.
func TestReadmeMapsTheTree(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	_, layout, ok := strings.Cut(readme, "\nLayout, by the paths data takes")
	if !ok {
		t.Fatal("README.md has no layout")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	err = filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return fs.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		}
		pkg, _ := filepath.Rel("../../internal", filepath.Dir(path))
		if pkg = filepath.ToSlash(pkg); !strings.Contains(layout, "`"+pkg+"`") {
			t.Errorf("README.md's layout does not name internal/%s", pkg)
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, setup, _ := strings.Cut(readme, "\n## Set up")
	setup, _, _ = strings.Cut(setup, "\n## ")
	if cmds := regexp.MustCompile(`(?m)^    make \S+`).FindAllString(setup, -1); strings.Join(cmds, ",") != "    make demo,    make test" {
		t.Errorf("README.md's set-up section shows %q; want make demo and make test alone", cmds)
	}
	index, err := os.ReadFile("../../docs/README.md")
	pages, err2 := os.ReadDir("../../docs")
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	for _, p := range pages {
		name := p.Name()
		if strings.HasSuffix(name, ".md") && name != "README.md" && !strings.Contains(string(index), "]("+name+")") {
			t.Errorf("docs/README.md does not link %s", name)
		}
	}
}
