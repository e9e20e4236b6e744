package inventory

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// An inventory is written by gpumemd as root, but a configless controller pulls it over
// the network from each node (gpumemctl inventory pull), and its strings end up in the
// slurm.conf Include and gres.conf Slurm reads. So every field is checked against what it
// means, not only its shape: a string may hold none of the characters Slurm's parsers
// split on (blanks and newlines end a word and a line, '#' starts a comment, '=' a value,
// '"' a quoted one, ',' and ':' split a Gres= list, '[' ']' a hostlist), and every count
// and size is bounded by what hardware has. Within these bounds a value needs no quoting
// in Slurm's files; outside them the whole file is refused, naming the node and the field.
const (
	MaxGPUsPerNode   = 64      // NVML indices 0-63; the largest nodes sold have 16
	MaxMinor         = 254     // /dev/nvidia0-254; 255 is /dev/nvidiactl
	MaxGPUMemoryMiB  = 4 << 20 // 4 TiB per GPU, over 10x the largest GPU made
	MaxMIGInstances  = 7       // a MIG GPU splits into at most 7 GPU instances
	MIGSlots         = 8       // memory slots of a MIG GPU, which placements start at
	maxMIGID         = 63      // GPU and compute instance ids (NVML's are below 16)
	MaxCPUs          = 16384   // CPUs of a node, and so the bound on core ids in Cores=
	MaxNodeMemoryMiB = 1 << 30 // 1 PiB of host RAM
	MaxNodeNameLen   = 128
	maxTokenLen      = 64  // a GRES type or MIG profile
	maxWordLen       = 128 // a partition or feature name
	maxGPUNameLen    = 96  // NVML's product name buffer is 96 bytes
	maxCoresLen      = 4096
)

var (
	// tokenRe is a GRES type or MIG profile ("h100", "nvidia_a100-sxm4-80gb", "1g.10gb",
	// "1g.10gb+me"): what Slurm can read as the middle of gpu:TYPE:COUNT.
	tokenRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
	uuidRe  = regexp.MustCompile(`^GPU-[0-9A-Za-z-]{1,64}$`)
	coresRe = regexp.MustCompile(`^[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*$`)
	capsRe  = regexp.MustCompile(`^/dev/nvidia-caps/nvidia-cap[0-9]{1,7}$`)
)

// Validate rejects inventories that would make gres.conf lie, or that hold anything
// Slurm would read as more than the value it is written as.
func (c Cluster) Validate() error {
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		if err := n.Validate(); err != nil {
			return err
		}
		if seen[n.Name] {
			return fmt.Errorf("inventory: node %q listed twice", n.Name)
		}
		seen[n.Name] = true
	}
	return nil
}

// Validate checks one node: its name and every field of every GPU.
func (n Node) Validate() error {
	if n.Name == "" {
		return fmt.Errorf("inventory: node without a name")
	}
	if err := CheckNodeName(n.Name); err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("inventory: node %s: "+format, append([]any{n.Name}, a...)...)
	}
	for _, w := range []struct {
		field string
		list  []string
	}{{"partition", n.Partitions}, {"feature", n.Features}} {
		for _, v := range w.list {
			if !isWord(v) {
				return bad("%s %q: want a name of up to %d printable characters without blanks, quotes, '#', '=', ',' or '\\'", w.field, v, maxWordLen)
			}
		}
	}
	if n.CPUs < 0 || n.CPUs > MaxCPUs {
		return bad("cpus %d: want 0 to %d", n.CPUs, MaxCPUs)
	}
	if n.MemoryMiB < 0 || n.MemoryMiB > MaxNodeMemoryMiB {
		return bad("memory_mib %d: want 0 to %d (1 PiB)", n.MemoryMiB, int64(MaxNodeMemoryMiB))
	}
	if len(n.GPUs) > MaxGPUsPerNode {
		return bad("%d GPUs: a node has at most %d", len(n.GPUs), MaxGPUsPerNode)
	}
	index := map[int]bool{}
	for _, g := range n.GPUs {
		if err := g.validate(); err != nil {
			return bad("GPU %d: %v", g.Index, err)
		}
		if index[g.Index] {
			return bad("GPU index %d listed twice", g.Index)
		}
		index[g.Index] = true
	}
	return nil
}

func (g GPU) validate() error {
	if g.Index < 0 || g.Index >= MaxGPUsPerNode {
		return fmt.Errorf("index %d: want 0 to %d", g.Index, MaxGPUsPerNode-1)
	}
	if g.Minor < 0 || g.Minor > MaxMinor {
		return fmt.Errorf("minor %d: want 0 to %d (/dev/nvidiaN)", g.Minor, MaxMinor)
	}
	if g.Type == "" {
		return fmt.Errorf("empty type")
	}
	if !isToken(g.Type) {
		return fmt.Errorf("type %q: want up to %d letters, digits, '.', '_', '+' or '-', starting with a letter or digit", g.Type, maxTokenLen)
	}
	if g.Name != "" && !isGPUName(g.Name) {
		return fmt.Errorf("name %q: want up to %d printable ASCII characters without quotes, '#', '=' or '\\'", g.Name, maxGPUNameLen)
	}
	if g.UUID != "" && !uuidRe.MatchString(g.UUID) {
		return fmt.Errorf("uuid %q: want GPU- and up to 64 letters, digits or '-', as NVML names a GPU", g.UUID)
	}
	if g.MemoryMiB <= 0 || g.MemoryMiB > MaxGPUMemoryMiB {
		return fmt.Errorf("memory_mib must be > 0 and at most %d (4 TiB), got %d", int64(MaxGPUMemoryMiB), g.MemoryMiB)
	}
	if g.Cores != "" {
		if _, err := maxCore(g.Cores); err != nil {
			return fmt.Errorf("cores %q: %v", g.Cores, err)
		}
	}
	switch g.FenceBackend {
	case "", "dmem", "misc":
	default:
		return fmt.Errorf("fence_backend %q; want dmem or misc", g.FenceBackend)
	}
	switch g.Fence {
	case "", FenceHardware, FenceDriver, FenceMPS, FenceNone:
	default:
		return fmt.Errorf("fence %q; want %q, %q, %q or %q", g.Fence, FenceHardware, FenceDriver, FenceMPS, FenceNone)
	}
	if g.Sharing != "" && g.Sharing != SharingShard && g.Sharing != SharingWhole {
		return fmt.Errorf("sharing %q; want %q or %q", g.Sharing, SharingShard, SharingWhole)
	}
	if len(g.Instances) > MaxMIGInstances {
		return fmt.Errorf("%d MIG instances: a GPU has at most %d", len(g.Instances), MaxMIGInstances)
	}
	var sum int64
	slots := 0
	for _, in := range g.Instances {
		if err := in.validate(g); err != nil {
			return fmt.Errorf("MIG instance %d: %v", in.GI, err)
		}
		sum += in.MemoryMiB
		slots += in.Slices
	}
	if sum > g.MemoryMiB {
		return fmt.Errorf("MIG instances hold %d MiB, more than the GPU's %d MiB", sum, g.MemoryMiB)
	}
	if slots > MIGSlots {
		return fmt.Errorf("MIG instances take %d slices, more than a GPU's %d", slots, MIGSlots)
	}
	return nil
}

func (in MIGInstance) validate(g GPU) error {
	if in.MemoryMiB <= 0 || in.Profile == "" {
		return fmt.Errorf("needs a profile and memory_mib > 0")
	}
	if !isToken(in.Profile) {
		return fmt.Errorf("profile %q: want a MIG profile name such as 1g.10gb", in.Profile)
	}
	if in.GI < 0 || in.GI > maxMIGID || in.CI < 0 || in.CI > maxMIGID {
		return fmt.Errorf("gi %d, ci %d: want 0 to %d", in.GI, in.CI, maxMIGID)
	}
	if in.Slices < 0 || in.Start < 0 || in.Start+in.Slices > MIGSlots {
		return fmt.Errorf("start %d, slices %d: a placement lies within the GPU's %d slots", in.Start, in.Slices, MIGSlots)
	}
	if len(in.Files) > 3 {
		return fmt.Errorf("%d files: want the GPU's and its two caps files", len(in.Files))
	}
	for i, f := range in.Files {
		if i == 0 && f != fmt.Sprintf("/dev/nvidia%d", g.Minor) {
			return fmt.Errorf("file %q: want the GPU's own /dev/nvidia%d first", f, g.Minor)
		}
		if i > 0 && !capsRe.MatchString(f) {
			return fmt.Errorf("file %q: want a caps file /dev/nvidia-caps/nvidia-capN", f)
		}
	}
	return nil
}

// CheckHardware refuses a node's answer that describes hardware no node has, beyond
// what Validate checks field by field: a device file named by two GPUs or two MIG
// instances (slurmd refuses gres.conf then), a MIG instance listed twice, or cores
// Slurm does not give the node. cpus is the node's CPUs as the controller's slurm.conf
// has them (0: unknown, cores left to Validate's bound).
func (n Node) CheckHardware(cpus int) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("inventory: node %s: "+format, append([]any{n.Name}, a...)...)
	}
	minor, files := map[int]bool{}, map[string]bool{}
	for _, g := range n.GPUs {
		if minor[g.Minor] {
			return bad("GPU %d: minor %d (/dev/nvidia%d) is another GPU's too", g.Index, g.Minor, g.Minor)
		}
		minor[g.Minor] = true
		if g.Cores != "" && cpus > 0 {
			if top, err := maxCore(g.Cores); err != nil || top >= cpus {
				return bad("GPU %d: cores %q: the node has %d CPUs (slurm.conf), numbered 0 to %d", g.Index, g.Cores, cpus, cpus-1)
			}
		}
		gis := map[int]bool{}
		for _, in := range g.Instances {
			if gis[in.GI] {
				return bad("GPU %d: MIG instance %d listed twice", g.Index, in.GI)
			}
			gis[in.GI] = true
			for i, f := range in.Files {
				if i > 0 && files[f] { // [0] is the GPU's own, shared by its instances
					return bad("GPU %d: MIG instance %d: file %s is another instance's too", g.Index, in.GI, f)
				}
				files[f] = i > 0
			}
		}
	}
	return nil
}

// maxCore parses a Cores= list ("0-15,32-47") and returns its highest core id.
func maxCore(s string) (int, error) {
	if len(s) > maxCoresLen || !coresRe.MatchString(s) {
		return 0, fmt.Errorf("want a list of core ids and ranges such as 0-15,32-47")
	}
	top := -1
	for _, r := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(r, "-")
		a, _ := strconv.Atoi(lo)
		b := a
		if ok {
			b, _ = strconv.Atoi(hi)
		}
		if a > b || b >= MaxCPUs {
			return 0, fmt.Errorf("range %s: want low-high, ids below %d", r, MaxCPUs)
		}
		top = max(top, b)
	}
	return top, nil
}

func isToken(s string) bool { return len(s) <= maxTokenLen && tokenRe.MatchString(s) }

// isWord is a partition or feature name: printable ASCII without what ends or splits a
// slurm.conf value.
func isWord(s string) bool {
	return s != "" && len(s) <= maxWordLen && strings.IndexFunc(s, func(r rune) bool {
		return r <= ' ' || r > '~' || strings.ContainsRune(`"'#=,\`, r)
	}) < 0
}

// isGPUName is NVML's product name ("NVIDIA H100 80GB HBM3"): blanks allowed, as it is
// never written into Slurm's files, but nothing that would break a line or a quote.
func isGPUName(s string) bool {
	return len(s) <= maxGPUNameLen && strings.IndexFunc(s, func(r rune) bool {
		return r < ' ' || r > '~' || strings.ContainsRune(`"'#=\`, r)
	}) < 0
}
