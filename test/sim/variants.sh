#!/bin/bash
# Writes workloads derived from the Alibaba trace that no policy was tuned on, to test
# placement policies away from the nine published workloads:
#   mem150.csv     default, every task's host memory x1.5 (memory binds)
#   cpu70share.csv gpushare40, CPU x0.7, and 30% of the single whole-GPU tasks made
#                  shares of a size drawn from the workload's own shares
#   mem50.csv      multigpu30, every task's host memory x0.5 (memory never binds)
#   cpu130.csv     default, every task's CPU x1.3 (CPU binds)
#   cpu50.csv      gpushare60, every task's CPU x0.5
#   nocpuonly.csv  default without its CPU-only tasks
#   cpuonly2x.csv  multigpu40 with every CPU-only task twice
#   models.csv     default, 20% of GPU tasks bound to V100M16|V100M32, 10% to T4
#   models2.csv    multigpu30, 25% of GPU tasks bound to G2
#   fewshare.csv   gpushare60, half of its shares made whole GPUs
#   both120.csv    multigpu50, CPU and host memory x1.2
#   small75.csv    gpushare80, CPU and host memory x0.75
#
#   test/sim/variants.sh OUTDIR
#   gpumemctl simulate --workload OUTDIR/mem150.csv,OUTDIR/cpu70share.csv,OUTDIR/mem50.csv --policy fgd,gpumem
#
# The trace folder is $GPUMEM_TRACE_DIR, else ../shared/data/alibaba-gpu-v2023 beside
# the repository. awk's generator is seeded, so the files are the same every time.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TRACE=${GPUMEM_TRACE_DIR:-$REPO/../shared/data/alibaba-gpu-v2023}
OUT=${1:?usage: variants.sh OUTDIR}
[ -r "$TRACE/openb_pod_list_default.csv" ] || { echo "variants: no trace at $TRACE; get https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023 (its csv folder) and set GPUMEM_TRACE_DIR to it" >&2; exit 1; }
mkdir -p "$OUT"

# Columns: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...
awk -F, -v OFS=, 'NR > 1 { $3 = int($3 * 1.5) } { print }' "$TRACE/openb_pod_list_default.csv" >"$OUT/mem150.csv"
awk -F, -v OFS=, 'NR > 1 { $3 = int($3 * 0.5) } { print }' "$TRACE/openb_pod_list_multigpu30.csv" >"$OUT/mem50.csv"
awk -F, -v OFS=, '
	NR == FNR { if (FNR > 1 && $4 == 1 && $5 < 1000) share[n++] = $5; next }
	FNR == 1 { srand(7); print; next }
	{
		$2 = int($2 * 0.7)
		if ($4 == 1 && $5 == 1000 && rand() < 0.3) $5 = share[int(rand() * n)]
		print
	}' "$TRACE/openb_pod_list_gpushare40.csv" "$TRACE/openb_pod_list_gpushare40.csv" >"$OUT/cpu70share.csv"
scale() { # FILE CPU MEM OUT
	awk -F, -v OFS=, -v c="$2" -v m="$3" 'NR > 1 { $2 = int($2 * c); $3 = int($3 * m) } { print }' "$TRACE/$1" >"$OUT/$4"
}
scale openb_pod_list_default.csv 1.3 1 cpu130.csv
scale openb_pod_list_gpushare60.csv 0.5 1 cpu50.csv
scale openb_pod_list_multigpu50.csv 1.2 1.2 both120.csv
scale openb_pod_list_gpushare80.csv 0.75 0.75 small75.csv
awk -F, 'NR == 1 || $4 > 0' "$TRACE/openb_pod_list_default.csv" >"$OUT/nocpuonly.csv"
awk -F, '{ print } NR > 1 && $4 == 0 { $1 = $1 "-b"; print }' OFS=, "$TRACE/openb_pod_list_multigpu40.csv" >"$OUT/cpuonly2x.csv"
# The multigpu lists have no gpu_spec column: models2 adds one.
awk -F, -v OFS=, 'FNR == 1 { srand(11); print; next } $4 > 0 { r = rand(); if (r < 0.2) $6 = "V100M16|V100M32"; else if (r < 0.3) $6 = "T4" } { print }' \
	"$TRACE/openb_pod_list_default.csv" >"$OUT/models.csv"
awk -F, -v OFS=, 'FNR == 1 { srand(13); print $1, $2, $3, $4, $5, "gpu_spec"; next } { print $1, $2, $3, $4, $5, ($4 > 0 && rand() < 0.25) ? "G2" : "" }' \
	"$TRACE/openb_pod_list_multigpu30.csv" >"$OUT/models2.csv"
awk -F, -v OFS=, 'FNR == 1 { srand(17); print; next } $4 == 1 && $5 < 1000 && rand() < 0.5 { $5 = 1000 } { print }' \
	"$TRACE/openb_pod_list_gpushare60.csv" >"$OUT/fewshare.csv"
echo "variants: wrote $(cd "$OUT" && ls mem150.csv cpu70share.csv mem50.csv cpu130.csv cpu50.csv nocpuonly.csv cpuonly2x.csv models.csv models2.csv fewshare.csv both120.csv small75.csv | tr '\n' ' ')"
