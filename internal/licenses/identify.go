// Package licenses finds the third-party code gpumem's binaries and Slurm plugins link,
// names each piece's license from its own LICENSE file in the module cache, and renders
// the third-party notice the packages install. Its test fails when a dependency arrives
// under a license not in Allowed, or when the committed notice no longer matches.
package licenses

import (
	"regexp"
	"sort"
	"strings"
)

// Allowed are the licenses gpumem (Apache-2.0) may link and ship without review: each is
// compatible with Apache-2.0 and with GPL-2.0-or-later Slurm loading the plugins. A new
// one belongs here only after docs/license.md says why it is compatible.
var Allowed = map[string]bool{
	"Apache-2.0":   true,
	"MIT":          true,
	"BSD-2-Clause": true,
	"BSD-3-Clause": true,
	"ISC":          true,
	"blessing":     true, // SQLite's public-domain dedication
}

// rule names a license by phrases its text always contains. Phrases are matched on
// normalized text (lower case, every run of other characters one space), so line
// breaks, punctuation and comment markers do not matter.
type rule struct {
	id  string
	all []string // every one must appear
	any []string // at least one must appear, when given
	not []string // none may appear
}

// rules are checked in full against every text; a text may match several (a module that
// ships two licenses in one file must satisfy both). The last rules name licenses that
// are never allowed, so a permissive text with a restrictive rider still fails.
var rules = []rule{
	{id: "Apache-2.0", all: []string{"apache license version 2 0"},
		any: []string{"grant of patent license", "licensed under the apache license version 2 0"}},
	{id: "MIT", all: []string{
		"permission is hereby granted free of charge to any person obtaining a copy",
		"the above copyright notice and this permission notice shall be included in all copies or substantial portions of the software"}},
	{id: "BSD-3-Clause", all: []string{
		"redistribution and use in source and binary forms with or without modification are permitted",
		"redistributions of source code must retain the above copyright notice",
		"redistributions in binary form must reproduce the above copyright notice",
		"to endorse or promote products derived from this software"},
		not: []string{"all advertising materials mentioning features or use of this software"}},
	{id: "BSD-2-Clause", all: []string{
		"redistribution and use in source and binary forms with or without modification are permitted",
		"redistributions of source code must retain the above copyright notice",
		"redistributions in binary form must reproduce the above copyright notice"},
		not: []string{"to endorse or promote products derived from this software", "all advertising materials mentioning features or use of this software"}},
	{id: "ISC", all: []string{"permission to use copy modify and or distribute this software for any purpose with or without fee is hereby granted"}},
	{id: "blessing", all: []string{"the author disclaims copyright to this source code", "here is a blessing"}},
	{id: "BSD-4-Clause", all: []string{"all advertising materials mentioning features or use of this software"}},
	{id: "MPL-2.0", all: []string{"mozilla public license version 2 0"}},
	{id: "GPL", all: []string{"gnu general public license"}},
	// The GPL's own text points to the LGPL and AGPL by name, so those are known by
	// their titles, which carry a version.
	{id: "LGPL", any: []string{"gnu lesser general public license version", "gnu library general public license version"}},
	{id: "AGPL", all: []string{"gnu affero general public license version"}},
	{id: "SSPL", all: []string{"server side public license"}},
	{id: "BUSL", all: []string{"business source license"}},
	{id: "JSON", all: []string{"the software shall be used for good not evil"}},
	{id: "Commons-Clause", all: []string{"commons clause"}},
	{id: "non-commercial", any: []string{"non commercial", "noncommercial"}},
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func normalize(text string) string {
	return " " + strings.TrimSpace(nonWord.ReplaceAllString(strings.ToLower(text), " ")) + " "
}

func contains(norm, phrase string) bool { return strings.Contains(norm, " "+phrase+" ") }

// Identify returns the SPDX identifiers (or, for licenses never allowed, a family name)
// of every license text found in text, sorted; none when nothing is recognised.
func Identify(text string) []string {
	norm := normalize(text)
	var ids []string
	for _, r := range rules {
		ok := true
		for _, p := range r.all {
			ok = ok && contains(norm, p)
		}
		if len(r.any) > 0 {
			found := false
			for _, p := range r.any {
				found = found || contains(norm, p)
			}
			ok = ok && found
		}
		for _, p := range r.not {
			ok = ok && !contains(norm, p)
		}
		if ok {
			ids = append(ids, r.id)
		}
	}
	sort.Strings(ids)
	return ids
}
