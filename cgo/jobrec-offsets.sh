#!/bin/sh
# Print the gpumem_jobrec.h entry for Slurm releases: where slurmctld's job_record_t and
# job_details_t keep their magic numbers and the fields job_modify reads (see
# cgo/include/gpumem_jobrec.h).
#
#   cgo/jobrec-offsets.sh SLURM_SOURCE_DIR...
#
# Each SLURM_SOURCE_DIR is a checkout of SchedMD/slurm at a release's tag (for example
# slurm-24-11-5-1); its slurm/slurm_version.h.in and META give the version. The offsets
# are measured by compiling against that tree's own slurmctld headers (x86_64, gcc).
# Consecutive trees whose offsets are all the same share one entry. Measuring fails when
# the tree's JOB_MAGIC or DETAILS_MAGIC is not the value gpumem_jobrec.h checks.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 SLURM_SOURCE_DIR..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/off.c" <<'C'
#include <stddef.h>
#include <stdio.h>
#include "src/slurmctld/slurmctld.h"
#if JOB_MAGIC != 0xf0b7392c || DETAILS_MAGIC != 0x0dea84e7
#error "JOB_MAGIC or DETAILS_MAGIC is not the value gpumem_jobrec.h checks"
#endif
#define F(name, type, field) printf("#define GPUMEM_JR_%s %zu\n", name, offsetof(type, field))
int main(void)
{
	F("MAGIC", job_record_t, magic);
	F("JOB_ID", job_record_t, job_id);
	F("DETAILS", job_record_t, details);
	F("PARTITION", job_record_t, partition);
	F("TRES_PER_NODE", job_record_t, tres_per_node);
	F("TRES_PER_JOB", job_record_t, tres_per_job);
	F("TRES_PER_SOCKET", job_record_t, tres_per_socket);
	F("TRES_PER_TASK", job_record_t, tres_per_task);
	F("DT_MAGIC", DETAILS_T, magic);
	F("DT_FEATURES", DETAILS_T, features);
	F("DT_REQ_NODES", DETAILS_T, req_nodes);
	F("DT_EXC_NODES", DETAILS_T, exc_nodes);
	F("DT_MIN_NODES", DETAILS_T, min_nodes);
	return 0;
}
C

# measure DIR: prints the tree's version condition, then writes its offsets to $tmp/body.
measure() {
	src=$(cd "$1" && pwd)
	field() { sed -n "s/^[[:space:]]*$1:[[:space:]]*0*\([0-9][0-9]*\).*/\1/p" "$src/META"; }
	major=$(field Major) minor=$(field Minor) micro=$(field Micro)
	rm -rf "$tmp/inc" && mkdir -p "$tmp/inc/slurm"
	num=$(printf '0x%02x%02x%02x' "$major" "$minor" "$micro")
	sed "s/@SLURM_VERSION_NUMBER@/$num/;s/@SLURM_MAJOR@/$major/;s/@SLURM_MINOR@/$minor/;s/@SLURM_MICRO@/$micro/;s/@SLURM_VERSION_STRING@/$major.$minor.$micro/" \
		"$src/slurm/slurm_version.h.in" >"$tmp/inc/slurm/slurm_version.h"
	echo '#define HAVE_STDBOOL_H 1' >"$tmp/inc/config.h"
	# job_details_t is a typedef in later releases, a bare struct job_details in earlier ones.
	gcc -I"$tmp/inc" -I"$src" -DDETAILS_T=job_details_t -o "$tmp/off" "$tmp/off.c" 2>/dev/null ||
		gcc -I"$tmp/inc" -I"$src" -DDETAILS_T='struct job_details' -o "$tmp/off" "$tmp/off.c"
	"$tmp/off" >"$tmp/body"
	echo "SLURM_VERSION_NUMBER == SLURM_VERSION_NUM($major, $minor, $micro)"
}

conds="" prev=""
for dir; do
	cond=$(measure "$dir")
	if [ -n "$prev" ] && ! cmp -s "$tmp/body" "$tmp/prev"; then
		printf '#elif %s\n' "$conds"
		cat "$tmp/prev"
		conds=""
	fi
	conds=${conds:+"$conds || \\
	"}$cond
	mv "$tmp/body" "$tmp/prev"
	prev=1
done
printf '#elif %s\n' "$conds"
cat "$tmp/prev"
