#!/bin/sh
# gpumem's Prometheus rules for a site's own scrape jobs and runbooks:
#
#   gpumem-rules.sh [SIDECAR_SELECTOR [CLUSTER_SELECTOR [RUNBOOKS]]] >/etc/prometheus/gpumem-rules.yml
#
# gpumem-rules.yml finds gpumemd's targets by job="gpumemd" and gpumemctl exporter's by
# job="gpumem-cluster", the job names of the shipped prometheus.yml, and links each alert
# to its runbook in docs/monitoring.md on GitHub. A site whose scrape jobs are named
# otherwise gives the label matchers that find them, e.g. 'job="gpu-nodes"' or
# 'job="slurm",role="controller"'; a site that keeps its own copy of the runbooks gives
# their address (each alert's anchor, #gpumemsidecardown, ..., is appended). An empty
# argument keeps the default. Check the result with `promtool check rules`.
set -eu
rules=$(dirname "$0")/gpumem-rules.yml
sidecar=${1:-job=\"gpumemd\"}
cluster=${2:-job=\"gpumem-cluster\"}
runbooks=${3:-https://github.com/gpumem/gpumem/blob/main/docs/monitoring.md}
for s in "$sidecar" "$cluster"; do
	case "$s" in
	*[{}]* | *"
"*)
		echo "gpumem-rules.sh: $s: give label matchers, such as job=\"gpu-nodes\", without braces" >&2
		exit 2
		;;
	esac
done
# Plain text replacement (index, not gsub): a matcher may hold regex characters and &.
awk -v s="$sidecar" -v c="$cluster" -v r="$runbooks" '
function swap(line, from, to,   out, i) {
	out = ""
	while ((i = index(line, from)) > 0) {
		out = out substr(line, 1, i - 1) to
		line = substr(line, i + length(from))
	}
	return out line
}
{
	$0 = swap($0, "job=\"gpumemd\"", s)
	$0 = swap($0, "job=\"gpumem-cluster\"", c)
	$0 = swap($0, "https://github.com/gpumem/gpumem/blob/main/docs/monitoring.md#", r "#")
	print
}' "$rules"
