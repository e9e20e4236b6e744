package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DirEnv names the environment variable that points at the trace folder.
const DirEnv = "GPUMEM_TRACE_DIR"

// Source is where the trace comes from, for the messages that say it is missing. The
// repository does not ship it: its owner invites research and study use but grants no
// redistribution, so tests fall back to a synthetic sample (SampleRel).
const Source = "Alibaba's cluster-trace-gpu-v2023 (the csv folder of https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023)"

// File names inside the trace folder.
const (
	NodesFile     = "openb_node_list_gpu_node.csv"
	SequenceFile  = "openb_default_tune1.3_seed42_sequence.csv"
	CurvesFile    = "published_alloc_curves.csv"
	workloadStem  = "openb_pod_list_"
	sharedDataRel = "../shared/data/alibaba-gpu-v2023"
)

// Workloads are the workloads of the published comparison, in its order.
var Workloads = []string{"default", "gpushare40", "gpushare60", "gpushare80", "gpushare100",
	"multigpu20", "multigpu30", "multigpu40", "multigpu50"}

// WorkloadFile is the file name of a workload ("default", "gpushare40", ...).
func WorkloadFile(w string) string { return workloadStem + w + ".csv" }

// WorkloadName is the inverse of WorkloadFile; names that are not trace files pass through.
func WorkloadName(file string) string {
	base := strings.TrimSuffix(filepath.Base(file), ".csv")
	return strings.TrimPrefix(base, workloadStem)
}

// FindDir locates the trace: $GPUMEM_TRACE_DIR if set, else the shared data folder
// beside the repository that contains the working directory.
func FindDir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, NodesFile)); err != nil {
			return "", fmt.Errorf("$%s=%s has no %s; the trace is %s", DirEnv, d, NodesFile, Source)
		}
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(root, sharedDataRel)
	if _, err := os.Stat(filepath.Join(d, NodesFile)); err != nil {
		return "", fmt.Errorf("no trace at %s: get %s and set $%s to the folder holding %s", d, Source, DirEnv, NodesFile)
	}
	return d, nil
}

// SampleRel is the synthetic sample inside the repository (written by
// go run ./internal/trace/samplegen): a node list and a "default" workload in the trace's
// columns, invented rather than copied, since the trace's owner grants use but not
// redistribution. It has no reference sequence and no published curves.
const SampleRel = "internal/trace/testdata/sample"

// TestData is what tests replay: the full trace when FindDir finds it (full is true),
// else the repository's synthetic sample, so that a clean clone runs every test that
// needs data. Tests that compare with the published figures need full; the rest check
// on the sample invariants that hold on any workload.
func TestData() (dir string, full bool, err error) {
	d, err := FindDir()
	if err == nil {
		return d, true, nil
	}
	if os.Getenv(DirEnv) != "" {
		return "", false, err // a wrong folder named on purpose is an error, not a fallback
	}
	root, err := moduleRoot()
	if err != nil {
		return "", false, err
	}
	d = filepath.Join(root, SampleRel)
	if _, err := os.Stat(filepath.Join(d, NodesFile)); err != nil {
		return "", false, fmt.Errorf("neither the trace nor the repository's sample (%s): %w", SampleRel, err)
	}
	return d, false, nil
}

// moduleRoot is the folder of the go.mod above the working directory.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no trace: get " + Source + " and set $" + DirEnv + " to that folder")
		}
	}
}

// LoadNodes reads a node list file.
func LoadNodes(path string) ([]Node, error) { return load(path, ReadNodes) }

// LoadPods reads a task list file.
func LoadPods(path string) ([]Pod, error) { return load(path, ReadPods) }

// LoadSequence reads a reference sequence file.
func LoadSequence(path string) (*Sequence, error) { return load(path, ReadSequence) }

// LoadCurves reads a published curves file.
func LoadCurves(path string) ([]Curve, error) { return load(path, ReadCurves) }

func load[T any](path string, read func(string, io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return read(filepath.Base(path), f)
}
