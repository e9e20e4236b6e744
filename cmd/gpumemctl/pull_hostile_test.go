package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// hostileFake is n2's GPUs for the lab's fake NVML: a whole GPU (shards, Cores=) and a
// MIG GPU (instances, caps files), so that every field gres.conf and the node lines are
// written from is in the answer a hostile node can bend.
const hostileFake = `{"driver_version": "550.54.15", "gpus": [
  {"model": "h100-80gb", "cores": "0-7"},
  {"model": "a100-40gb", "cores": "8-15", "mig": {"enabled": true, "instances": [
    {"profile": "3g.20gb", "start": 0}, {"profile": "2g.10gb", "start": 4}]}}]}`

// pullLab is a controller pulling n1 (always good) and n2 (whatever n2 is set to serve)
// into the node lines, gres.conf and inventory directory the controller's Slurm and
// plugins read.
type pullLab struct {
	dir, tmpl, lines, gres, inv string
	good                        map[string][]byte // what each node's gpumemd really serves
}

func newPullLab(t *testing.T) *pullLab {
	t.Helper()
	l := &pullLab{dir: t.TempDir(), good: map[string][]byte{}}
	fake := filepath.Join(l.dir, "n2-nvml.json")
	os.WriteFile(fake, []byte(hostileFake), 0o644)
	for n, nvml := range map[string]string{"n1": "../../test/lab/nodes/n1.json", "n2": fake} {
		out, err := run(t, "inventory", "--nvml=fake:"+nvml, "--node", n)
		if err != nil {
			t.Fatal(err)
		}
		l.good[n] = []byte(out)
	}
	l.tmpl = filepath.Join(l.dir, "gpu-nodes.conf.in")
	l.lines = filepath.Join(l.dir, "gpu-nodes.conf")
	l.gres = filepath.Join(l.dir, "gres.conf")
	l.inv = filepath.Join(l.dir, "gpumem.d")
	return l
}

// template names the nodes at addrs (node -> host:port).
func (l *pullLab) template(addrs map[string]string) {
	os.WriteFile(l.tmpl, []byte("NodeName=n1 NodeAddr="+addrs["n1"]+" CPUs=16\nNodeName=n2 NodeAddr="+addrs["n2"]+" CPUs=16\n"), 0o644)
}

func (l *pullLab) pull(t *testing.T, url string, extra ...string) (string, error) {
	t.Helper()
	conf := filepath.Join(l.dir, "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 1GiB\nInventoryPath = "+l.inv+"\n"), 0o644)
	return run(t, append([]string{"inventory", "pull", "--config", conf, "--slurm-conf", filepath.Join(l.dir, "none.conf"),
		"--node-template", l.tmpl, "--node-lines", l.lines, "--gres-conf", l.gres, "--url", url,
		"--timeout", "1s", "--slurm-version", "24.11"}, extra...)...)
}

// files is everything the pull wrote that Slurm or the plugins read.
func (l *pullLab) files(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{l.lines, l.gres, filepath.Join(l.inv, "n1.json"), filepath.Join(l.inv, "n2.json")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}

// restore puts back the files of a good pull, so each answer is tried on its own.
func (l *pullLab) restore(t *testing.T, files map[string]string) {
	t.Helper()
	for _, p := range []string{l.lines, l.gres, filepath.Join(l.inv, "n1.json"), filepath.Join(l.inv, "n2.json")} {
		if err := os.WriteFile(p, []byte(files[filepath.Base(p)]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// same fails the test where what the controller reads differs from want.
func same(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %s changed:\n%s\nwant:\n%s", what, name, got[name], w)
		}
	}
}

// edit is n2's good answer with f applied to its node object.
func edit(t *testing.T, good []byte, f func(n map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(good, &doc); err != nil {
		t.Fatal(err)
	}
	f(doc["nodes"].([]any)[0].(map[string]any))
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gpuOf(n map[string]any, i int) map[string]any { return n["gpus"].([]any)[i].(map[string]any) }

func instOf(n map[string]any, i int) map[string]any {
	return gpuOf(n, 1)["mig_instances"].([]any)[i].(map[string]any)
}

// manyGPUs is an answer of k GPUs of mib MiB each, as small as JSON allows.
func manyGPUs(k int, mib int64) []byte {
	var b strings.Builder
	b.WriteString(`{"version":2,"nodes":[{"name":"n2","gpus":[`)
	for i := range k {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"index":%d,"minor":%d,"type":"h100","memory_mib":%d}`, i, i, mib)
	}
	b.WriteString(`]}]}`)
	return []byte(b.String())
}

// hostileAnswers are what a local user holding n2's port, or a broken n2, may answer;
// want is what the warning must name ("" for an answer that is taken but may change
// nothing the controller reads).
func hostileAnswers(t *testing.T, good []byte, goodURL string) []struct {
	name, want string
	h          http.HandlerFunc
} {
	body := func(b []byte) http.HandlerFunc { return func(w http.ResponseWriter, _ *http.Request) { w.Write(b) } }
	set := func(f func(n map[string]any)) http.HandlerFunc { return body(edit(t, good, f)) }
	const partition = "\nPartitionName=evil Nodes=ALL AllowGroups=ALL PriorityTier=65533 Default=YES"
	const gresLine = "\nNodeName=n1 Name=gpu Type=h100 File=/dev/nvidia7"
	type c = struct {
		name, want string
		h          http.HandlerFunc
	}
	cases := []c{
		{"type with a partition line", "type", set(func(n map[string]any) { gpuOf(n, 0)["type"] = "h100" + partition })},
		{"cores with another node's gres line", "cores", set(func(n map[string]any) { gpuOf(n, 0)["cores"] = "0-7" + gresLine })},
		{"profile with another node's gres line", "profile", set(func(n map[string]any) { instOf(n, 0)["profile"] = "3g.20gb" + gresLine })},
		{"device file with a second file", "file", set(func(n map[string]any) {
			instOf(n, 0)["files"].([]any)[1] = "/dev/nvidia-caps/nvidia-cap138,/dev/sda"
		})},
		{"device file outside /dev/nvidia-caps", "file", set(func(n map[string]any) { instOf(n, 0)["files"].([]any)[2] = "/etc/shadow" })},
		{"name with a newline", "name", set(func(n map[string]any) { gpuOf(n, 0)["name"] = "NVIDIA H100" + partition })},
		{"uuid with a newline", "uuid", set(func(n map[string]any) { gpuOf(n, 0)["uuid"] = "GPU-1" + partition })},
		{"partition with keys", "partition", set(func(n map[string]any) { n["partitions"] = []any{"train AllowGroups=ALL"} })},
		{"feature with a comment", "feature", set(func(n map[string]any) { n["features"] = []any{"a100#x"} })},
		{"partitions it claims", "", set(func(n map[string]any) { n["partitions"] = []any{"admin"}; n["features"] = []any{"vip"} })},
		{"CPUs it claims", "cpus", set(func(n map[string]any) { n["cpus"] = 1 << 40 })},
	}
	for _, sep := range []string{"\r", "\t", " ", "=", ",", ":", "#", `"`, "'", "\\", "\x00", "\u2028", "[", "]"} {
		cases = append(cases, c{fmt.Sprintf("type with %q", sep), "type", set(func(n map[string]any) { gpuOf(n, 0)["type"] = "h100" + sep + "x" })})
	}
	cases = append(cases, []c{
		{"invalid UTF-8", "type", body(bytes.Replace(good, []byte(`"type": "h100"`), []byte("\"type\": \"h100\xff\xfe\""), 1))},
		{"60,000 GPUs of 1 PiB", "GPUs", body(manyGPUs(60000, 1<<30))},
		{"65 GPUs", "65 GPUs", body(manyGPUs(65, 81920))},
		{"a GPU of 1 PiB", "memory_mib", set(func(n map[string]any) { gpuOf(n, 0)["memory_mib"] = 1 << 30 })},
		{"index 10^9", "index", set(func(n map[string]any) { gpuOf(n, 0)["index"] = 1_000_000_000 })},
		{"minor past nvidiactl", "minor", set(func(n map[string]any) { gpuOf(n, 0)["minor"] = 255 })},
		{"duplicate index", "index 0 listed twice", set(func(n map[string]any) { gpuOf(n, 1)["index"] = 0 })},
		{"duplicate minor", "minor 0", set(func(n map[string]any) {
			gpuOf(n, 1)["minor"] = 0
			for i := range 2 {
				instOf(n, i)["files"].([]any)[0] = "/dev/nvidia0"
			}
		})},
		{"cores beyond the node's CPUs", "cores", set(func(n map[string]any) { gpuOf(n, 0)["cores"] = "0-255" })},
		{"cores past any node", "cores", set(func(n map[string]any) { gpuOf(n, 0)["cores"] = "0-99999" })},
		{"8 MIG instances", "MIG instances", set(func(n map[string]any) {
			in := gpuOf(n, 1)["mig_instances"].([]any)
			g := gpuOf(n, 1)
			for i := range 6 {
				x := map[string]any{}
				for k, v := range in[1].(map[string]any) {
					x[k] = v
				}
				x["gi"], x["memory_mib"], x["slices"], x["start"] = 10+i, 1, 0, 0
				x["files"] = []any{"/dev/nvidia1", fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", 200+2*i), fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", 201+2*i)}
				in = append(in, x)
			}
			g["mig_instances"] = in
		})},
		{"MIG placement past the GPU", "placement", set(func(n map[string]any) { instOf(n, 1)["start"] = 7 })},
		{"duplicate MIG instance", "listed twice", set(func(n map[string]any) { instOf(n, 1)["gi"] = 0 })},
		{"one caps file for two instances", "another instance's", set(func(n map[string]any) {
			instOf(n, 1)["files"].([]any)[1] = instOf(n, 0)["files"].([]any)[1]
		})},
		{"another node's name", "not of n2", body(bytes.Replace(good, []byte(`"name": "n2"`), []byte(`"name": "n1"`), 1))},
		{"two nodes", "not of n2", set(func(n map[string]any) {})}, // replaced below
		{"format version 99", "format version 99", body(bytes.Replace(good, []byte(fmt.Sprintf(`"version": %d`, inventory.FormatVersion)), []byte(`"version": 99`), 1))},
		{"1 GiB body", "more than", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"nodes": [{"name": "n2", "gpus": [], "features": ["`))
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 1024 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
		{"1 GiB announced", "more than", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(1<<30))
			w.Write(good)
		}},
		{"slow drip", "within", func(w http.ResponseWriter, r *http.Request) {
			for _, b := range good {
				w.Write([]byte{b})
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}},
		{"redirect", "redirected", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, goodURL, http.StatusFound) }},
		{"huge headers", "header", func(w http.ResponseWriter, _ *http.Request) {
			for i := range 128 {
				w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("p", 1<<10))
			}
			w.Write(good)
		}},
	}...)
	for i := range cases {
		if cases[i].name == "two nodes" {
			var doc map[string]any
			json.Unmarshal(good, &doc)
			other := map[string]any{"name": "n1", "gpus": []any{map[string]any{"index": 0, "type": "h100", "memory_mib": 81920}}}
			doc["nodes"] = append(doc["nodes"].([]any), other)
			b, _ := json.Marshal(doc)
			cases[i].h = body(b)
		}
	}
	return cases
}

// A node's answer, whatever it holds, changes nothing the controller reads: the node
// lines slurm.conf Includes, gres.conf and the inventory stay byte for byte those of
// the good pull (or the node's claims are dropped), the node is named in a warning that
// says which field was wrong, and the good node is still pulled.
func TestInventoryPullFromAHostileNode(t *testing.T) {
	l := newPullLab(t)
	var n2 atomic.Pointer[http.HandlerFunc]
	serveNode := func(h func() http.HandlerFunc) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h()(w, r) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	goodN2 := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(l.good["n2"]) })
	n2.Store(&goodN2)
	addrs := map[string]string{
		"n1": serveNode(func() http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { w.Write(l.good["n1"]) }
		}),
		"n2": serveNode(func() http.HandlerFunc { return *n2.Load() }),
	}
	l.template(addrs)
	out, err := l.pull(t, "http://{addr}/inventory")
	if err != nil {
		t.Fatalf("good pull: %v\n%s", err, out)
	}
	if !strings.Contains(out, "WARNING: pulling over plain HTTP") {
		t.Errorf("a plain HTTP pull must say so loudly; printed:\n%s", out)
	}
	want := l.files(t)
	if !strings.Contains(want["gres.conf"], "NodeName=n2 Name=gpu Type=3g.20gb") || !strings.Contains(want["gpu-nodes.conf"], "NodeName=n2 NodeAddr=") {
		t.Fatalf("good pull wrote:\n%s\n%s", want["gres.conf"], want["gpu-nodes.conf"])
	}
	for _, c := range hostileAnswers(t, l.good["n2"], "http://"+addrs["n1"]+"/inventory") {
		h := c.h
		n2.Store(&h)
		l.restore(t, want)
		out, err := l.pull(t, "http://{addr}/inventory")
		var st exitStatus
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v\n%s", c.name, err, out)
		case c.want != "" && (!errors.As(err, &st) || st.code != 1):
			t.Errorf("%s: exit %v; want 1 (n2 skipped, n1 pulled)\n%s", c.name, err, out)
		case c.want != "" && (!strings.Contains(out, "node n2 (") || !strings.Contains(out, c.want)):
			t.Errorf("%s: want a warning naming n2 and %q; printed:\n%s", c.name, c.want, out)
		}
		for _, ln := range strings.Split(out, "\n") {
			if strings.HasPrefix(ln, "PartitionName") || strings.HasPrefix(ln, "NodeName=n1 Name=gpu") {
				t.Errorf("%s: the warning carries the node's line %q through", c.name, ln)
			}
		}
		same(t, c.name, l.files(t), want)
	}
}
