# Quick start on a fresh Debian/Ubuntu machine with Swift installed:
#   make demo   installs what is missing, builds, and runs the main job
#   make test   installs what is missing, builds (failing on any warning), and runs every test
#               (the Redis tests against a private redis-server started for the run)
#   make test-under-load   the same tests beside a CPU hog at 4x the cores

SWIFT ?= swift
SHELL := /bin/bash
# Debian packages the build and the tests need (later modules add theirs here).
DEBIAN_PACKAGES := liblz4-dev lz4 pkg-config redis-server redis-tools

.PHONY: all deps build test test-under-load demo docs bench bench-smoke tsan fuzz fuzz-smoke fuzz-seeds clean

all: build

deps:
	@scripts/install-deps $(DEBIAN_PACKAGES)

build: deps
	scripts/build-without-warnings

# The tests run beside a private redis-server (scripts/with-redis passes its URL in
# HANEKE_REDIS_URL); if it cannot start, the run fails rather than skipping the Redis tests.
# scripts/run-tests runs the heavy suites in a second process, one test at a time; the blocking
# watchdog fails either process if a job blocks one of Swift's cooperative threads.
test: deps
	scripts/build-without-warnings --build-tests
	SWIFT=$(SWIFT) scripts/with-redis scripts/run-tests

# The same tests beside a CPU hog that keeps the load average at 4x the cores (scripts/under-load);
# it prints the load average it saw and the suite's wall time.
test-under-load: deps
	scripts/build-without-warnings --build-tests
	SWIFT=$(SWIFT) scripts/under-load scripts/with-redis scripts/run-tests

demo: deps
	$(SWIFT) run -c release haneke demo

docs: deps
	scripts/build-docs

# Benchmarks: a separate package (Benchmarks/), built in release mode. `make bench` prints the
# table and writes bench-results.json; `make bench-smoke` runs every benchmark a few iterations.
bench: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/HanekeBenchmarks --json ../bench-results.json

bench-smoke: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/HanekeBenchmarks --smoke --json .build/bench-smoke.json

# Reliability: the stress suite under ThreadSanitizer, and libFuzzer targets (Fuzz/) run for
# FUZZ_SECONDS each (fuzz-smoke: 10 s each, for CI). Seeds are in Fuzz/Corpus (make fuzz-seeds
# writes them with the library); what the fuzzer finds goes to Fuzz/.corpus (not committed), and a
# crash stops the run with its input saved there.
FUZZ_SECONDS ?= 120
FUZZ_TARGETS := FuzzEntryFile FuzzLZ4Frame FuzzJSON

# The blocking watchdog is off under ThreadSanitizer, which runs every job many times slower and
# defers signals to its own points: the watchdog's measurements would mean nothing there.
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	HANEKE_WATCHDOG=off TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter StressTests

fuzz: deps
	SWIFT=$(SWIFT) scripts/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=10

fuzz-seeds:
	cd Fuzz && $(SWIFT) build -c release --product FuzzSeeds --scratch-path .build-seeds && .build-seeds/release/FuzzSeeds Corpus

clean:
	rm -rf .build .build-tsan Benchmarks/.build Fuzz/.build Fuzz/.build-fuzz Fuzz/.build-seeds Fuzz/.corpus
