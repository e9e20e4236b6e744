package inventory

import (
	"fmt"
	"strings"
	"testing"
)

// fullNode is the largest node the bounds allow: 64 GPUs of 4 TiB, one of them a MIG
// GPU with 7 instances filling its 8 slots, cores up to the last id.
func fullNode() Node {
	n := Node{Name: "gpu-01.rack7", Partitions: []string{"train", "debug_2"}, Features: []string{"h100", "nvlink"},
		CPUs: MaxCPUs, MemoryMiB: MaxNodeMemoryMiB}
	for i := range MaxGPUsPerNode {
		n.GPUs = append(n.GPUs, GPU{Index: i, Minor: MaxMinor - i, Name: "NVIDIA H100 80GB HBM3 (SXM5)", Type: "nvidia_h100_80gb_hbm3",
			UUID: fmt.Sprintf("GPU-fa4e0000-0000-4000-8000-%012d", i), MemoryMiB: MaxGPUMemoryMiB, Cores: fmt.Sprintf("0-7,%d", MaxCPUs-1),
			Sharing: SharingWhole, Fence: FenceDriver})
	}
	g := &n.GPUs[0]
	g.MIG = true
	for i := range MaxMIGInstances {
		slices := 1
		if i == 0 {
			slices = 2
		}
		g.Instances = append(g.Instances, MIGInstance{Profile: "1g.10gb+me", MemoryMiB: 9856, GI: i + 7, CI: 0, Start: max(0, i+1), Slices: slices,
			Files: []string{fmt.Sprintf("/dev/nvidia%d", g.Minor), fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", 2*i+100), fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", 2*i+101)}})
	}
	g.Instances[0].Start = 0
	return n
}

// Every bound admits what hardware has and refuses one step past it, naming the field.
func TestValidateBoundsByMeaning(t *testing.T) {
	if err := (Cluster{Nodes: []Node{fullNode()}}).Validate(); err != nil {
		t.Fatalf("the largest node the bounds allow: %v", err)
	}
	if err := fullNode().CheckHardware(MaxCPUs); err != nil {
		t.Fatalf("the largest node the bounds allow: %v", err)
	}
	for _, c := range []struct {
		want string
		bend func(n *Node)
	}{
		{"node name", func(n *Node) { n.Name = strings.Repeat("a", MaxNodeNameLen+1) }},
		{"node name", func(n *Node) { n.Name = "gpu[01-02]" }},
		{"partition", func(n *Node) { n.Partitions = []string{"a,b"} }},
		{"partition", func(n *Node) { n.Partitions = []string{""} }},
		{"feature", func(n *Node) { n.Features = []string{"x\ny"} }},
		{"cpus", func(n *Node) { n.CPUs = MaxCPUs + 1 }},
		{"memory_mib", func(n *Node) { n.MemoryMiB = MaxNodeMemoryMiB + 1 }},
		{"65 GPUs", func(n *Node) { n.GPUs = append(n.GPUs, GPU{Index: 0, Type: "x", MemoryMiB: 1}) }},
		{"index 64", func(n *Node) { n.GPUs[1].Index = MaxGPUsPerNode }},
		{"index -1", func(n *Node) { n.GPUs[1].Index = -1 }},
		{"index 2 listed twice", func(n *Node) { n.GPUs[1].Index = 2 }},
		{"minor 255", func(n *Node) { n.GPUs[1].Minor = MaxMinor + 1 }},
		{"type", func(n *Node) { n.GPUs[1].Type = strings.Repeat("h", maxTokenLen+1) }},
		{"type", func(n *Node) { n.GPUs[1].Type = "-h100" }},
		{"type", func(n *Node) { n.GPUs[1].Type = "h100:2" }},
		{"name", func(n *Node) { n.GPUs[1].Name = "NVIDIA\x7f" }},
		{"name", func(n *Node) { n.GPUs[1].Name = strings.Repeat("N", maxGPUNameLen+1) }},
		{"uuid", func(n *Node) { n.GPUs[1].UUID = "MIG-1" }},
		{"memory_mib", func(n *Node) { n.GPUs[1].MemoryMiB = MaxGPUMemoryMiB + 1 }},
		{"cores", func(n *Node) { n.GPUs[1].Cores = fmt.Sprint(MaxCPUs) }},
		{"cores", func(n *Node) { n.GPUs[1].Cores = "7-3" }},
		{"cores", func(n *Node) { n.GPUs[1].Cores = "0-3," }},
		{"8 MIG instances", func(n *Node) {
			n.GPUs[0].Instances = append(n.GPUs[0].Instances, MIGInstance{Profile: "1g.10gb", MemoryMiB: 1, GI: 60})
		}},
		{"9 slices", func(n *Node) { n.GPUs[0].Instances[1].Slices = 2 }},
		{"placement", func(n *Node) { n.GPUs[0].Instances[6].Start = MIGSlots }},
		{"gi 64", func(n *Node) { n.GPUs[0].Instances[1].GI = maxMIGID + 1 }},
		{"profile", func(n *Node) { n.GPUs[0].Instances[1].Profile = "1g.10gb MultipleFiles=/dev/sda" }},
		{"file", func(n *Node) { n.GPUs[0].Instances[1].Files[0] = "/dev/nvidia0" }},
		{"file", func(n *Node) { n.GPUs[0].Instances[1].Files[2] = "/dev/nvidia-caps/../sda" }},
		{"4 files", func(n *Node) {
			n.GPUs[0].Instances[1].Files = append(n.GPUs[0].Instances[1].Files, "/dev/nvidia-caps/nvidia-cap1")
		}},
	} {
		n := fullNode()
		c.bend(&n)
		err := (Cluster{Nodes: []Node{n}}).Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

// What only a node's own answer must also hold: each device once, cores it has.
func TestCheckHardware(t *testing.T) {
	for _, c := range []struct {
		want string
		cpus int
		bend func(n *Node)
	}{
		{"minor 254", 0, func(n *Node) { n.GPUs[1].Minor = MaxMinor }},
		{"MIG instance 7 listed twice", 0, func(n *Node) { n.GPUs[0].Instances[1].GI = 7 }},
		{"another instance's", 0, func(n *Node) { n.GPUs[0].Instances[1].Files[2] = n.GPUs[0].Instances[0].Files[1] }},
		{"the node has 64 CPUs", 64, func(n *Node) {}},
	} {
		n := fullNode()
		c.bend(&n)
		if err := n.Validate(); err != nil {
			t.Fatalf("%s: Validate alone refuses it: %v", c.want, err)
		}
		if err := n.CheckHardware(c.cpus); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}
