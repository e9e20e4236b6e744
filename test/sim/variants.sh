#!/bin/bash
# Writes workloads derived from the Alibaba trace that no policy was tuned on, to test
# placement policies away from the nine published workloads:
#   mem150.csv     default, every task's host memory x1.5 (memory binds)
#   cpu70share.csv gpushare40, CPU x0.7, and 30% of the single whole-GPU tasks made
#                  shares of a size drawn from the workload's own shares
#   mem50.csv      multigpu30, every task's host memory x0.5 (memory never binds)
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
echo "variants: wrote $OUT/mem150.csv $OUT/cpu70share.csv $OUT/mem50.csv"
