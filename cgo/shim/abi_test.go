package shim

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/plugin"
)

// TestBuiltPluginsExportTheABI builds both plugins with cgo/build.sh against this
// machine's slurm.h and checks what Slurm's plugin loader looks for: every symbol of the
// plugin type, and plugin_version equal to the header's SLURM_VERSION_NUMBER.
func TestBuiltPluginsExportTheABI(t *testing.T) {
	out := builtPlugins(t)
	hdr, err := os.ReadFile("/usr/include/slurm/slurm_version.h")
	if err != nil {
		t.Skip("no Slurm headers (libslurm-dev):", err)
	}
	m := regexp.MustCompile(`(?m)^#define SLURM_VERSION_NUMBER (0x[0-9a-fA-F]+)`).FindSubmatch(hdr)
	if m == nil {
		t.Fatal("slurm_version.h has no SLURM_VERSION_NUMBER")
	}
	want, _ := strconv.ParseUint(string(m[1]), 0, 32)
	for so, syms := range map[string][]string{
		"job_submit_gpumem.so": {"plugin_name", "plugin_type", "plugin_version", "init", "fini", "job_submit", "job_modify"},
		"cli_filter_gpumem.so": {"plugin_name", "plugin_type", "plugin_version", "init", "fini",
			"cli_filter_p_setup_defaults", "cli_filter_p_pre_submit", "cli_filter_p_post_submit"},
	} {
		f, err := elf.Open(filepath.Join(out, so))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dyn, err := f.DynamicSymbols()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]elf.Symbol{}
		for _, s := range dyn {
			if s.Section != elf.SHN_UNDEF {
				byName[s.Name] = s
			}
		}
		for _, name := range syms {
			if _, ok := byName[name]; !ok {
				t.Errorf("%s does not export %s", so, name)
			}
		}
		if got := readU32(t, f, byName["plugin_version"]); got != uint32(want) {
			t.Errorf("%s: plugin_version %#x; want %#x from slurm_version.h", so, got, want)
		}
		typ := readBytes(t, f, byName["plugin_type"])
		if wantType := so[:len(so)-len("_gpumem.so")] + "/gpumem"; string(bytes.TrimRight(typ, "\x00")) != wantType {
			t.Errorf("%s: plugin_type %q; want %q", so, typ, wantType)
		}
	}
}

func readBytes(t *testing.T, f *elf.File, s elf.Symbol) []byte {
	t.Helper()
	sec := f.Sections[s.Section]
	b, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	off := s.Value - sec.Addr
	return b[off : off+s.Size]
}

func readU32(t *testing.T, f *elf.File, s elf.Symbol) uint32 {
	t.Helper()
	return binary.LittleEndian.Uint32(readBytes(t, f, s))
}

// FuzzPrefilterAgreesWithGo: the C shims pass a job on without entering Go when
// gpumem_has_mem says no; that must happen only where Go's one rule, plugin.AsksMem
// (request.AsksMem), also says no, or a gpu:mem job would reach Slurm untranslated. The
// prefilter may say yes where Go says no: Go then leaves the job as it is.
func FuzzPrefilterAgreesWithGo(f *testing.F) {
	for _, s := range []string{"", "gres:gpu:mem:20g", "gres/GPU:MEM:1G", "gres:gpu:2", "me", "mEm", "gres:shard:20", "\xffmem", "m\x00em"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i] // Slurm's strings end at the first NUL
		}
		for _, fields := range []plugin.Fields{{PerNode: s}, {PerJob: s}, {PerSocket: s}, {PerTask: s}} {
			if plugin.AsksMem(fields) && !prefilterHasMem(s) {
				t.Fatalf("%q: Go asks for GPU memory, the C prefilter passes it on", s)
			}
		}
	})
}

// FuzzScriptPrefilterAgreesWithGo: job_submit hands a batch script to Go only when
// gpumem_script_to_go says yes; it must say yes wherever plugin.ScriptRepeats refuses.
func FuzzScriptPrefilterAgreesWithGo(f *testing.F) {
	for _, s := range []string{"", "#!/bin/sh\n#SBATCH --gres=gpu:mem:20g\n#SBATCH --gres=shard:3\n", "#SBATCH --gres gpu:mem:1g --gres=x", "--gres",
		"#SBATCH --g\"res\"=gpu:mem:20g\n#SBATCH --\\gres shard:3\n", "#SLURM ---gres=gpu:MeM:1g -J x --gres=y # c\n \t\n#SBATCH hetjob\n",
		"#SBATCH --gres=gpu:mem:5g\n#\n#SBATCH --g'r'es=shard:1\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		for _, mem := range []bool{false, true} {
			if r := plugin.ScriptRepeats(s, mem); r != "" && !prefilterScript(s, mem) {
				t.Fatalf("%q (gpu:mem job %v): Go refuses (%s), the C prefilter passes it on", s, mem, r)
			}
		}
	})
}

// The C prefilter reads the bytes Go reads: the same bound, and past it the same answer.
func TestScriptPrefilterBound(t *testing.T) {
	if scriptMax != plugin.MaxScriptRead {
		t.Fatalf("GPUMEM_SCRIPT_MAX %d, plugin.MaxScriptRead %d", scriptMax, plugin.MaxScriptRead)
	}
	head := strings.Repeat("#SBATCH -n1\n", plugin.MaxScriptRead/12+1)
	for _, c := range []struct {
		name, script string
		mem, want    bool
	}{
		{"a gpu:mem job's long #SBATCH head", head + "true\n", true, true},
		{"another job's long #SBATCH head", head + "true\n", false, false},
		{"a long body", "#SBATCH -n1\ntrue\n" + head, true, false},
		{"a repeat past the bound", "#SBATCH --gres=gpu:mem:5g\n" + head + "#SBATCH --gres=shard:1\n", false, false},
		{"a repeat within it", "#SBATCH --gres=gpu:mem:5g\n#SBATCH --gres=shard:1\n" + head, false, true},
	} {
		if got := prefilterScript(c.script, c.mem); got != c.want {
			t.Errorf("%s: prefilter %v, want %v", c.name, got, c.want)
		}
		if r := plugin.ScriptRepeats(c.script, c.mem); (r != "") != c.want {
			t.Errorf("%s: Go says %q", c.name, r)
		}
	}
}
