# gpumem — GPU-memory-aware scheduling for Slurm.
# `make demo` and `make test` are the two commands a newcomer runs (as root, Debian 12).

GO      ?= go
BIN     := bin
GOFLAGS ?= -trimpath
# The releases come from the release table (internal/slurmrel/releases.txt).
RELEASE  = CGO_ENABLED=0 $(GO) run ./cmd/slurm-release
ifeq ($(origin LAB_SLURM),undefined)
LAB_SLURM := $(shell $(RELEASE) names --host)
endif
# The version from git tags, stamped into every binary and plugin (internal/version).
VERSION_LDFLAGS = $(shell packaging/version.sh --ldflags)
# go-nvml's cgo calls NVML functions its header marks deprecated (kept for old drivers):
# a first build would print a few hundred warnings that say nothing about gpumem.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export LAB_SLURM CGO_CFLAGS

.PHONY: all build cmds plugins test unit mutants vet bench bench-smoke fuzz deps lab-up lab-down e2e demo package package-test chroots clean

all: build

## build: binaries and plugins into bin/
build: cmds plugins

cmds:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS) -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/...

plugins:
	cgo/build.sh $(BIN)

## unit: Go tests (no Slurm needed); prints each skip with its reason and the counts
# Every package under -race, but for two that replay traces: under the race detector
# their replays take 90 s of a 2-core machine's unit run instead of 11, and find nothing,
# since the one goroutine fan-out there (sim's table runner) is run under -race by its
# own small test (RACE_RUNNER).
NORACE      := internal/placement internal/sim
RACE_RUNNER := ^TestRunTellsProgress$$
unit:
	$(GO) vet ./...
	{ $(GO) test -race -count=1 -json $$($(GO) list ./... | grep -vE '/($(subst $(eval) ,|,$(NORACE)))$$'); \
	  $(GO) test -count=1 -json -skip '$(RACE_RUNNER)' $(addprefix ./,$(NORACE)); \
	  $(GO) test -race -count=1 -json -run '$(RACE_RUNNER)' ./internal/sim; } | $(GO) run ./test/unitreport test/unit-skips.txt
	$(GO) -C packaging/nfpm vet ./...
	$(GO) -C packaging/nfpm test -count=1 ./... # its own module (nFPM): not in ./...

## mutants: small breaking changes to the decisions that matter, each of which some unit
## test must catch (test/mutants.txt); run after the unit tests pass
mutants: unit
	MUTANTS_UNIT_PASSED=1 test/mutants.sh

## test: everything CI runs: deps, unit tests, mutants, the benchmarks' smoke run,
## packages, the Slurm labs end to end
test: deps unit mutants bench-smoke package-test
	test/e2e.sh all

## deps: the Debian packages the build and the lab need (idempotent)
deps:
	test/lab/deps.sh

bench:
	$(GO) test -run=NONE -bench=. -benchmem ./internal/...

## bench-smoke: every script in test/bench at its smallest size (under a minute on 2
## cores; submit.sh as root, with a slurmctld of its own on port 7817, no lab), so that
## none breaks unseen; its figures mean nothing at that size
bench-smoke: build
	test/bench/smoke.sh

FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./internal/... ./cgo/...); do \
	  for f in $$($(GO) test -list='^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run=NONE -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; done

lab-up: build
	test/lab/lab.sh up

# lab-down stops whichever lab is up (all releases can run at once), of every release
# whose root this machine has.
lab-down:
	@for r in $$($(RELEASE) names); do for c in 0 1; do \
	  root=$$(LAB_CHROOT=$$c LAB_SLURM=$$r test/lab/lab.sh where | sed -n 's/^root=//p'); \
	  if [ -z "$$root" ] || [ -d "$$root" ]; then LAB_CHROOT=$$c LAB_SLURM=$$r test/lab/lab.sh down || exit 1; fi; \
	done; done

e2e:
	test/e2e.sh $(LAB_SLURM)

demo: deps build
	test/demo.sh

## package: deb and rpm packages into dist/ (gpumem-plugins-REL per Slurm release the
## build has headers for: CI's releases, from the lab's chroots), their
## binaries and plugins compiled apart from bin/'s, with zig for glibc 2.28 and newer
package: chroots
	packaging/build.sh

# The Debian roots of the chroot labs of CI's releases; the host's release gets one too
# (bookworm's, for 22.05), which takes the package tests' installs, so they never touch
# this machine's own Slurm.
chroots:
	for r in $$($(RELEASE) names --ci); do LAB_SLURM=$$r LAB_CHROOT=1 test/lab/lab.sh chroot || exit 1; done

## package-test: every package's metadata, files and scripts; as root also installed in
## the chroot of its release, loaded by that lab's slurmctld, and purged
package-test: build chroots
	@if [ "$$(id -u)" -eq 0 ]; then test/package-test.sh --lab; else test/package-test.sh; fi

clean:
	rm -rf $(BIN) build dist
