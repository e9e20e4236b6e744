package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTaskPrologMPSLimit(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "gpumem.conf")
	state := t.TempDir()
	os.WriteFile(conf, []byte("ShardUnit = 512MiB\n[gpumemd]\nFenceState = "+state+"\n"), 0o644)
	os.WriteFile(filepath.Join(state, "77"), []byte("driver\n"), 0o644)
	for _, c := range []struct {
		env           map[string]string
		out, errWants string
	}{
		{map[string]string{"SLURM_SHARDS_ON_NODE": "20", "CUDA_VISIBLE_DEVICES": "0"}, "export GPUMEM_FENCE=none\nexport CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M\n", ""},
		{map[string]string{"SLURM_SHARDS_ON_NODE": "20", "CUDA_VISIBLE_DEVICES": "0,1"}, "export GPUMEM_FENCE=none\nexport CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=5120M,1=5120M\n", ""},
		// The fence gpumemd's prolog recorded for the job wins.
		{map[string]string{"SLURM_JOB_ID": "77", "SLURM_SHARDS_ON_NODE": "20", "CUDA_VISIBLE_DEVICES": "0"}, "export GPUMEM_FENCE=driver\nexport CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M\n", ""},
		{map[string]string{"SLURM_JOB_ID": "../77", "SLURM_SHARDS_ON_NODE": "20", "CUDA_VISIBLE_DEVICES": "0"}, "export GPUMEM_FENCE=none\nexport CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M\n", ""},
		{map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, "export GPUMEM_FENCE=hardware\n", ""},
		{map[string]string{}, "", ""},
		{map[string]string{"SLURM_SHARDS_ON_NODE": "x", "CUDA_VISIBLE_DEVICES": "0"}, "export GPUMEM_FENCE=none\n", `SLURM_SHARDS_ON_NODE="x"`},
		{map[string]string{"SLURM_SHARDS_ON_NODE": "4"}, "", "names no GPU"},
	} {
		var out, errb bytes.Buffer
		rc := taskProlog([]string{"--config", conf}, func(k string) string { return c.env[k] }, &out, &errb)
		if rc != 0 || out.String() != c.out || (c.errWants != "" && !strings.Contains(errb.String(), c.errWants)) {
			t.Errorf("env %v: rc %d out %q err %q; want rc 0, out %q, err containing %q", c.env, rc, out.String(), errb.String(), c.out, c.errWants)
		}
	}
}
