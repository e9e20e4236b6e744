package licenses

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// root is the gpumem module, two levels above this package.
const root = "../.."

var (
	collectOnce sync.Once
	collected   []Component
	collectErr  error
)

func shipped(t *testing.T) []Component {
	t.Helper()
	collectOnce.Do(func() { collected, collectErr = Collect(root) })
	if collectErr != nil {
		t.Fatalf("listing what the binaries and plugins link: %v", collectErr)
	}
	return collected
}

// TestShippedLicensesAllowed fails when a dependency arrives whose license is not in
// Allowed, or whose license file is not recognised at all (Collect's error).
func TestShippedLicensesAllowed(t *testing.T) {
	cs := shipped(t)
	if err := Check(cs); err != nil {
		t.Fatal(err)
	}
	// The facts docs/license.md reasons from: the plugins link only Apache-2.0 and
	// BSD-3-Clause code (and, packaged, zig's MIT compiler_rt), and the binaries link the
	// five direct dependencies.
	want := map[string]string{
		"gopkg.in/ini.v1":                     "Apache-2.0",
		"github.com/NVIDIA/go-nvml":           "Apache-2.0",
		"github.com/spf13/cobra":              "Apache-2.0",
		"github.com/mattn/go-sqlite3":         "MIT",
		"SQLite":                              "blessing",
		"github.com/prometheus/client_golang": "Apache-2.0",
		stdlib:                                "BSD-3-Clause",
		zigRT:                                 "MIT",
	}
	for _, c := range cs {
		if w, ok := want[c.Name]; ok {
			if c.License() != w {
				t.Errorf("%s: license %q, want %q", c.Name, c.License(), w)
			}
			delete(want, c.Name)
		}
		for _, a := range c.UsedBy {
			if a == "plugins" && c.License() != "Apache-2.0" && c.License() != "BSD-3-Clause" && (c.Name != zigRT || c.License() != "MIT") {
				t.Errorf("%s (%s) is linked into the Slurm plugins; docs/license.md only covers Apache-2.0, BSD-3-Clause and zig's MIT compiler_rt there", c.Name, c.License())
			}
		}
	}
	for name := range want {
		t.Errorf("%s is not among the shipped components", name)
	}
}

// TestNoticeCurrent fails when THIRD_PARTY_NOTICES.md or the Debian copyright file is
// not what the module cache gives now: a dependency was added, removed or updated
// without regenerating them.
func TestNoticeCurrent(t *testing.T) {
	cs := shipped(t)
	deb, err := Debian(cs)
	if err != nil {
		t.Fatal(err)
	}
	current(t, NoticeFile, Render(cs))
	current(t, CopyrightFile, deb)
}

func current(t *testing.T, name, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatalf("%v; run go run ./internal/licenses/gen", err)
	}
	if string(got) == want {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s is stale; run go run ./internal/licenses/gen and commit it. First difference, line %d:\n  committed: %q\n  generated: %q", name, i+1, gl, wl)
		}
	}
}

func TestIdentify(t *testing.T) {
	mit := `Permission is hereby granted, free of charge, to any person obtaining a copy
of this software ... The above copyright notice and this permission notice shall be
included in all copies or substantial portions of the Software.`
	bsd := `Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:
* Redistributions of source code must retain the above copyright notice, this list.
* Redistributions in binary form must reproduce the above copyright notice, this list.`
	bsd3 := bsd + "\n* Neither the name of X nor the names of its contributors may be used to endorse or\npromote products derived from this software without specific prior written permission."
	for _, c := range []struct {
		name, text, want string
	}{
		{"MIT", mit, "MIT"},
		{"BSD-2", bsd, "BSD-2-Clause"},
		{"BSD-3", bsd3, "BSD-3-Clause"},
		{"BSD-4", bsd3 + "\n* All advertising materials mentioning features or use of this software must display", "BSD-4-Clause"},
		{"Apache header", "Licensed under the Apache License, Version 2.0 (the \"License\");", "Apache-2.0"},
		{"GPL-3", "GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007", "GPL"},
		{"LGPL", "GNU LESSER GENERAL PUBLIC LICENSE Version 3", "LGPL"},
		{"MPL", "Mozilla Public License Version 2.0", "MPL-2.0"},
		{"JSON", mit + "\nThe Software shall be used for Good, not Evil.", "JSON,MIT"},
		{"non-commercial rider", mit + "\nFor non-commercial use only.", "MIT,non-commercial"},
		{"SQLite", "The author disclaims copyright to this source code.  In place of\na legal notice, here is a blessing:", "blessing"},
		{"unknown", "All rights reserved.", ""},
	} {
		got := strings.Join(Identify(c.text), ",")
		if got != c.want {
			t.Errorf("%s: Identify = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCheckRefuses builds a module tree the way the module cache holds one and checks
// that a license outside Allowed, and a license file nobody recognises, both fail.
func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) module {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "COPYING"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return module{path: "example.com/" + name, version: "v1.0.0", dir: d}
	}
	gpl, err := component(write("gpl", "GNU GENERAL PUBLIC LICENSE\nVersion 2, June 1991"))
	if err != nil {
		t.Fatal(err)
	}
	err = Check([]Component{*gpl})
	if err == nil || !strings.Contains(err.Error(), "example.com/gpl v1.0.0: COPYING is GPL") {
		t.Errorf("Check of a GPL module = %v, want it refused by name", err)
	}
	if _, err := component(write("odd", "You may do as you like, mostly.")); err == nil || !strings.Contains(err.Error(), "no license recognised in COPYING") {
		t.Errorf("component with an unknown license = %v, want an error naming the file", err)
	}
	if _, err := component(module{path: "example.com/gone", version: "v1.0.0", dir: filepath.Join(dir, "gone")}); err == nil || !strings.Contains(err.Error(), "go mod download") {
		t.Errorf("component of a module not in the cache = %v, want an error saying to download it", err)
	}
}

// TestZigComponent: the notice names the zig packaging/zig.sh pins, so a new zig cannot
// build the packages under an old notice; and where that zig is at hand (ZIG, as
// packaging/build.sh sets it), the license kept here is the one it ships.
func TestZigComponent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "packaging", "zig.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var pinned string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, `want="`); ok {
			pinned, _, _ = strings.Cut(v, `"`)
		}
	}
	if pinned == "" {
		t.Fatal("packaging/zig.sh pins no zig version")
	}
	var z *Component
	for _, c := range shipped(t) {
		if c.Name == zigRT {
			z = &c
		}
	}
	if z == nil {
		t.Fatalf("%s is not among the shipped components", zigRT)
	}
	if z.Version != pinned || z.License() != "MIT" || strings.Join(z.UsedBy, ",") != "binaries,plugins" {
		t.Errorf("%s: version %q, license %q, used by %v; want %q, MIT, binaries and plugins", zigRT, z.Version, z.License(), z.UsedBy, pinned)
	}
	if !strings.Contains(z.Files[0].Text, "Copyright (c) Zig contributors") {
		t.Errorf("%s: license text names no holder:\n%s", zigRT, z.Files[0].Text)
	}
	zig := os.Getenv("ZIG")
	if zig == "" {
		t.Log("ZIG not set: the kept license is not compared with zig's own")
		return
	}
	own, err := os.ReadFile(filepath.Join(filepath.Dir(zig), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if tidy(string(own)) != z.Files[0].Text {
		t.Errorf("internal/licenses/zig/LICENSE is not the LICENSE of %s: copy it from there", zig)
	}
}
