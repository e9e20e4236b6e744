package slurmconf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmgres"
)

// WithGres renders NodeName lines for slurm.conf (a file it Includes) from template, the
// admin's own NodeName lines, with each node's Gres= taken from gres (node name to
// value, as gpumem renders it from the inventory). Slurm refuses a node defined twice,
// so the Gres= cannot go on a line of its own: a template line naming a node that gres
// knows is written once per such node (its hostlist expanded), with the template's own
// keys and the node's Gres=; the GRES the template gives that are not gpu or shard (a
// site's nic, mps) are kept after gpumem's. Every other line, and a line none of whose
// nodes gres knows, is copied as written; comments are dropped. missing lists the nodes
// of gres the template does not name (sorted): slurm.conf would not know them.
func WithGres(template string, gres map[string]string) (out string, missing []string, err error) {
	var b strings.Builder
	named := map[string]bool{}
	for _, ln := range logicalLines(template) {
		fields, err := tokens(ln.text)
		if err != nil {
			return "", nil, fmt.Errorf("line %d: %w", ln.no, err)
		}
		if len(fields) == 0 {
			continue
		}
		kv, err := pairs(fields)
		if err != nil || kv[0].key != "nodename" || strings.EqualFold(kv[0].val, "DEFAULT") {
			b.WriteString(strings.Join(quoteAll(fields), " ") + "\n")
			continue
		}
		hosts, err := ExpandHostlist(kv[0].val)
		if err != nil {
			return "", nil, fmt.Errorf("line %d: NodeName=%s: %w", ln.no, kv[0].val, err)
		}
		known := false
		for _, h := range hosts {
			named[h] = true
			_, ok := gres[h]
			known = known || ok
		}
		if !known {
			b.WriteString(strings.Join(quoteAll(fields), " ") + "\n")
			continue
		}
		for _, h := range hosts {
			g, ok := gres[h]
			if !plainValue(g) {
				return "", nil, fmt.Errorf("node %s: Gres=%q: a value with blanks, quotes, '#' or control characters cannot be written", h, g)
			}
			words := []string{"NodeName=" + h}
			for i, f := range fields[1:] {
				switch {
				case kv[i+1].key != "gres" || !ok: // a node without an inventory keeps the template's
					words = append(words, quote(f))
				default:
					g = strings.Join(nonEmpty(g, otherGres(kv[i+1].val)), ",")
				}
			}
			if ok && g != "" {
				words = append(words, "Gres="+g)
			}
			b.WriteString(strings.Join(words, " ") + "\n")
		}
	}
	for n := range gres {
		if !named[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	return b.String(), missing, nil
}

// otherGres is a Gres= value without its gpu and shard entries.
func otherGres(v string) string {
	var keep []string
	for _, e := range slurmgres.Split(v) {
		name := slurmgres.Name(strings.TrimSpace(e))
		if name != slurmgres.GPU && name != slurmgres.Shard && strings.TrimSpace(e) != "" {
			keep = append(keep, strings.TrimSpace(e))
		}
	}
	return strings.Join(keep, ",")
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// plainValue reports whether v can be written unquoted as one slurm.conf value. A Gres=
// gpumem renders never needs quotes; one that would (blanks, quotes, '#') or that holds
// a line break did not come from a checked inventory, and is refused, not written.
func plainValue(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' || strings.ContainsRune(`"'#\`, r) })
}

func quoteAll(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = quote(f)
	}
	return out
}

// quote writes back a Key=Value word that tokens unquoted: a value with a blank or a '#'
// goes back in double quotes.
func quote(f string) string {
	k, v, ok := strings.Cut(f, "=")
	if !ok || !strings.ContainsAny(v, " \t#") {
		return f
	}
	return k + `="` + v + `"`
}
