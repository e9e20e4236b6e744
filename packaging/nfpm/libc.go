package main

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
)

// glibcNeeded is the newest glibc symbol version the ELF files at paths import
// ("2.34"), or "" when they import none (a static binary): what a package of them
// must declare, so that it refuses to install where its binaries cannot start (an
// older libc fails every one of them at load, "GLIBC_2.34 not found").
func glibcNeeded(paths ...string) (string, error) {
	var newest []int
	var text string
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			return "", err
		}
		syms, err := f.ImportedSymbols()
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		for _, s := range syms {
			v, ok := strings.CutPrefix(s.Version, "GLIBC_")
			if !ok {
				continue
			}
			n, err := versionNumbers(v)
			if err != nil {
				return "", fmt.Errorf("%s: symbol %s: %w", p, s.Name, err)
			}
			if newer(n, newest) {
				newest, text = n, v
			}
		}
	}
	return text, nil
}

func versionNumbers(v string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(v, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("glibc version %q is not numbers", v)
		}
		out = append(out, n)
	}
	return out, nil
}

func newer(a, b []int) bool {
	for i := range max(len(a), len(b)) {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return x > y
		}
	}
	return false
}

// libcDepends is the dependency on glibc of a package holding the ELF files at paths,
// in the format's own words: Debian's libc6 and the rpm distributions' glibc.
func libcDepends(format string, paths ...string) ([]string, error) {
	v, err := glibcNeeded(paths...)
	if err != nil || v == "" {
		return nil, err
	}
	if format == "deb" {
		return []string{"libc6 (>= " + v + ")"}, nil
	}
	return []string{"glibc >= " + v}, nil
}
