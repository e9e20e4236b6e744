#!/bin/sh
# The plugin's cost against the host lists a job carries: job_submit's and job_modify's
# decision for a gpu:mem job whose --nodelist (-w) and --exclude (-x) name 1, 10^3 and
# 10^6 hosts, on a cluster of 64 nodes (BenchmarkHostRanges). Prints ns/op, B/op and the
# refusal's length per size, then each size's time and bytes relative to 1 name: about 1x
# where the cost is bounded by the cluster, about the size where it follows the list.
#
#   test/bench/ranges.sh
#   BENCHTIME=1x test/bench/ranges.sh       (one run per size: the smoke run)
#
# Exits non-zero when go test fails or prints no benchmark (a pipe would hide it).
set -eu
cd "$(dirname "$0")/../.."
go test -run '^$' -bench '^BenchmarkHostRanges$' -benchtime "${BENCHTIME:-300ms}" ./internal/plugin/ |
	awk '$1 ~ /^BenchmarkHostRanges\// {
		name = $1; sub(/^BenchmarkHostRanges\//, "", name); sub(/-[0-9]+$/, "", name)
		c = name; sub(/\/names=.*/, "", c); n = name; sub(/.*names=/, "", n)
		for (i = 2; i < NF; i++) v[$(i + 1)] = $i
		printf "%-16s %8s names %14.0f ns/op %12.0f B/op %9.0f refusal bytes\n", c, n, v["ns/op"], v["B/op"], v["refusal-bytes"]
		if (n == 1) { t1[c] = v["ns/op"]; b1[c] = v["B/op"]; order[++k] = c }
		else ratio[c] = ratio[c] sprintf("%s %s / 1: %.2fx time, %.2fx bytes\n", c, n == 1000 ? "1e3" : n == 1000000 ? "1e6" : n, v["ns/op"] / t1[c], v["B/op"] / b1[c])
		runs++
		next
	}
	/^FAIL/ { bad = 1 }
	/^(FAIL|ok|PASS)/ { tail = tail $0 "\n" }
	END {
		print ""; for (i = 1; i <= k; i++) printf "%s", ratio[order[i]]; printf "%s", tail
		if (bad || runs == 0) { print "ranges: go test failed or ran no benchmark" > "/dev/stderr"; exit 1 }
	}'
