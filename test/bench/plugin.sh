#!/bin/sh
# The plugin inside slurmctld at scale, without Slurm: on a generated inventory of NODES
# nodes (default 10,000) x 8 GPUs, one file per node, with a usage snapshot and pinning
# on, it prints the loader's times (first load, reload after one node file changed, a
# look with nothing changed; all off the submit path) and the submit path's time per job
# (p50, p99, max), split into admission with and without the usage view and the pin
# choice, for every PinPolicy (gpumem, best-fit, first-fit, spread) and without pinning,
# then a table of p50/p99 per policy beside the loader's times. Target: p99 <= 100 us
# with pinning on. Takes under a minute at 10,000 nodes on 2 cores.
#
#   test/bench/plugin.sh [NODES]
#   GPUMEM_BENCH_POLICIES=best-fit,off test/bench/plugin.sh      (some policies only)
set -eu
cd "$(dirname "$0")/../.."
GPUMEM_BENCH_NODES=${1:-10000} exec go test -run '^$' -bench '^BenchmarkPluginAtScale$' -benchtime 1x ./internal/plugin/
