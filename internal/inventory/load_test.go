package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

func nodeJSON(name string) string {
	return fmt.Sprintf(`{"nodes":[{"name":%q,"partitions":["gpu"],"gpus":[{"index":0,"name":"NVIDIA L4","type":"l4","memory_mib":23034}]}]}`, name)
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(c Cluster) string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

// One bad file costs its own nodes: too big, broken, not a regular file, or a node that
// two files list (either may be stale, so neither is used).
func TestReadSkipsBadFilesOnly(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.json"), nodeJSON("a"))
	write(t, filepath.Join(dir, "b.json"), `{"nodes": [`)
	write(t, filepath.Join(dir, "c.json"), nodeJSON("c"))
	write(t, filepath.Join(dir, "c-old.json"), nodeJSON("c"))
	write(t, filepath.Join(dir, "d.json"), nodeJSON("d")+strings.Repeat(" ", MaxNodeFileBytes))
	write(t, filepath.Join(dir, "e.json"), nodeJSON("e"))
	write(t, filepath.Join(dir, ".hidden.json"), `junk`)
	write(t, filepath.Join(dir, "notes.txt"), `junk`)
	if err := syscall.Mkfifo(filepath.Join(dir, "f.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r Reader
	c, skipped, err := r.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names(c) != "a,e" {
		t.Errorf("nodes %s; want a,e", names(c))
	}
	var why []string
	for _, s := range skipped {
		why = append(why, s.Error())
	}
	got := strings.Join(why, "\n")
	for _, want := range []string{"b.json: inventory: line 1, column 11: unexpected end of JSON input", "c.json: node c: also in " + filepath.Join(dir, "c-old.json"),
		"d.json: 4194420 bytes, more than the 4194304 allowed", "f.json: not a regular file"} {
		if !strings.Contains(got, want) {
			t.Errorf("skipped:\n%s\nwant a line with %q", got, want)
		}
	}
	if _, err := LoadPath(dir); err == nil {
		t.Error("LoadPath took a directory with bad files")
	}
}

// A second read parses only what changed.
func TestReadReparsesOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.json"), nodeJSON("a"))
	write(t, filepath.Join(dir, "b.json"), nodeJSON("b"))
	var r Reader
	if c, _, err := r.Read(dir); err != nil || names(c) != "a,b" {
		t.Fatalf("%s, %v", names(c), err)
	}
	// Same size and time, other content: taken from the cache, so still "a".
	write(t, filepath.Join(dir, "a.json"), nodeJSON("x"))
	fi, _ := os.Stat(filepath.Join(dir, "b.json"))
	if err := os.Chtimes(filepath.Join(dir, "a.json"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	r.cache["a.json"] = parsed{size: int64(len(nodeJSON("x"))), mtime: fi.ModTime(), nodes: []Node{{Name: "a"}}}
	if c, _, _ := r.Read(dir); names(c) != "a,b" {
		t.Errorf("unchanged stamp re-parsed: %s", names(c))
	}
	later := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(filepath.Join(dir, "a.json"), later, later); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := r.Read(dir); names(c) != "x,b" {
		t.Errorf("changed file not re-read: %s", names(c))
	}
	os.Remove(filepath.Join(dir, "b.json"))
	if c, _, _ := r.Read(dir); names(c) != "x" || len(r.cache) != 1 {
		t.Errorf("removed file still counted: %s, cache %d", names(c), len(r.cache))
	}
}

func TestSingleFileCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "inv.json")
	write(t, p, nodeJSON("a"))
	if c, err := LoadPath(p); err != nil || names(c) != "a" {
		t.Fatalf("%s, %v", names(c), err)
	}
	if _, err := atomicfile.ReadCapped(p, 10); err == nil || !strings.Contains(err.Error(), "more than the 10") {
		t.Errorf("cap not applied: %v", err)
	}
}

// TestLoadErrorsSayWhere: a broken inventory file is named, with the line and column
// of the fault, and a value of the wrong kind names the field as the file spells it.
func TestLoadErrorsSayWhere(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		body, says string
	}{
		{"{\n  \"version\": 2,\n  \"nodes\": [\n    {\"name\": \"n1\",, \"gpus\": []}\n  ]\n}\n", "line 4, column 19: invalid character ','"},
		{"{\n  \"version\": 2,\n  \"nodes\": [\n    {\"name\": \"n1\", \"gpus\": [{\"index\": 0, \"memory_mib\": \"80g\"}]}\n  ]\n}\n", "line 4, column 60: nodes.gpus.memory_mib is a JSON string; want a whole number"},
		{"{\"version\": 2, \"nodes\": [\n", "line 1, column 26: unexpected end of JSON input"},
	} {
		path := filepath.Join(dir, "inv.json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPath(path)
		if err == nil || !strings.HasPrefix(err.Error(), path+": inventory: "+c.says) {
			t.Errorf("LoadPath of\n%s: %v; want %s: ... %s", c.body, err, path, c.says)
		}
	}
}
