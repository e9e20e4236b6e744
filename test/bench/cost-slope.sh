#!/bin/sh
# The plugin's cost against the size of what a job carries: job_submit's read of a batch
# script (BenchmarkScriptCost: hostile shapes of 1k to 1M lines, read whole and with
# the bound) and cli_filter's read of the command line (BenchmarkCommandLineCost), each
# size 10x the one before. Prints ns/op per size and the ratio to the size before it:
# about 10 where the cost is linear, about 1 where the bound holds it flat.
#
#   test/bench/cost-slope.sh [BENCH-PATTERN]      (default: both benchmarks)
#   BENCHTIME=1x test/bench/cost-slope.sh          (one run per size: the smoke run)
#
# Exits non-zero when go test fails or prints no benchmark (a pipe would hide it).
set -eu
cd "$(dirname "$0")/../.."
go test -run '^$' -bench "${1:-^Benchmark(ScriptCost|CommandLineCost)\$}" -benchtime "${BENCHTIME:-300ms}" ./internal/plugin/ |
	awk '$1 ~ /^Benchmark/ && $4 == "ns/op" {
		name = $1; sub(/-[0-9]+$/, "", name)
		size = name; sub(/.*=/, "", size); shape = name; sub(/\/[a-z]+=[0-9]+$/, "", shape)
		ratio = (shape == last && prev > 0) ? sprintf("%.1fx", $3 / prev) : "-"
		printf "%-48s %9s %14.0f ns/op %8s\n", shape, size, $3, ratio
		last = shape; prev = $3; n++; next
	}
	/^FAIL/ { bad = 1 }
	/^(FAIL|ok|PASS)/ { print }
	END { if (bad || n == 0) { print "cost-slope: go test failed or ran no benchmark" > "/dev/stderr"; exit 1 } }'
