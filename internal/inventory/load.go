package inventory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

// Size caps: a node's file holds a few GPUs (a few KiB), so anything near MaxNodeFileBytes
// is not an inventory, and reading it whole would cost memory and time for nothing. A
// single-file inventory holds the whole cluster and gets MaxClusterFileBytes.
const (
	MaxNodeFileBytes    = 4 << 20
	MaxClusterFileBytes = 256 << 20
)

// LoadPath reads an inventory from a single JSON file, or from a directory of JSON
// files (one per node, as each node's gpumemd writes it onto a shared /etc/slurm),
// merged into one cluster. Files not ending in .json, and hidden ones, are ignored so
// that editors' and atomic writers' temporary files never count. Any file it has to
// skip (see Reader) is an error here: tools that write from the inventory want all of it.
func LoadPath(path string) (Cluster, error) {
	c, skipped, err := new(Reader).Read(path)
	if err != nil {
		return Cluster{}, err
	}
	if len(skipped) > 0 {
		return Cluster{}, skipped[0]
	}
	return c, nil
}

// Skipped is one file, or one node, that Reader.Read left out, and why.
type Skipped struct {
	Path string
	Node string // the node left out; "" when the whole file was
	Err  error
}

func (s Skipped) Error() string {
	if s.Node != "" {
		return fmt.Sprintf("%s: node %s: %v", s.Path, s.Node, s.Err)
	}
	return fmt.Sprintf("%s: %v", s.Path, s.Err)
}

// Reader reads inventories and remembers each directory file it parsed, by name, size and
// modification time, so reading a directory again parses only the files that changed.
// A Reader is used by one goroutine at a time.
type Reader struct {
	cache map[string]parsed
}

type parsed struct {
	size  int64
	mtime time.Time
	nodes []Node
	err   error
}

// Read reads path, a single file or a directory of per-node files. In a directory, a
// file that is too big, unreadable or broken costs only its own nodes, and a node listed
// in two files is left out (either copy may be the stale one); each is reported in
// skipped and the rest is returned. err is for a path that cannot be read at all, or a
// single-file inventory that is broken.
func (r *Reader) Read(path string) (c Cluster, skipped []Skipped, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Cluster{}, nil, err
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return Cluster{}, nil, atomicfile.ErrNotRegular
		}
		b, err := atomicfile.ReadCapped(path, MaxClusterFileBytes)
		if err != nil {
			return Cluster{}, nil, err
		}
		c, err := Decode(b)
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return c, nil, err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return Cluster{}, nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	next := make(map[string]parsed, len(names))
	from := map[string]string{} // node -> the file it came from
	dup := map[string]bool{}
	for _, n := range names {
		p, ok := r.parse(filepath.Join(path, n))
		if !ok {
			continue // gone while we looked
		}
		next[n] = p
		if p.err != nil {
			skipped = append(skipped, Skipped{Path: filepath.Join(path, n), Err: p.err})
			continue
		}
		for _, nd := range p.nodes {
			if first, ok := from[nd.Name]; ok {
				dup[nd.Name] = true
				skipped = append(skipped, Skipped{Path: filepath.Join(path, n), Node: nd.Name,
					Err: fmt.Errorf("also in %s; left out until only one file lists it", first)})
				continue
			}
			from[nd.Name] = filepath.Join(path, n)
		}
	}
	for _, n := range names {
		for _, nd := range next[n].nodes {
			if !dup[nd.Name] && from[nd.Name] == filepath.Join(path, n) {
				c.Nodes = append(c.Nodes, nd)
			}
		}
	}
	r.cache = next
	return c, skipped, nil
}

// parse reads one directory file, or takes it from the cache when its size and time are
// those it had when last parsed. ok is false for a file that vanished.
func (r *Reader) parse(path string) (parsed, bool) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return parsed{}, false
	}
	if err != nil {
		return parsed{err: err}, true
	}
	if !fi.Mode().IsRegular() {
		return parsed{err: atomicfile.ErrNotRegular}, true // a FIFO would block the open
	}
	name := filepath.Base(path)
	if old, ok := r.cache[name]; ok && old.size == fi.Size() && old.mtime.Equal(fi.ModTime()) {
		return old, true
	}
	p := parsed{size: fi.Size(), mtime: fi.ModTime()}
	b, err := atomicfile.ReadCapped(path, MaxNodeFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return parsed{}, false
	}
	if err == nil {
		var c Cluster
		if c, err = Decode(b); err == nil {
			p.nodes = c.Nodes
		}
	}
	p.err = err
	return p, true
}
