# Quick start on a fresh Debian/Ubuntu machine with Swift installed:
#   make demo      installs what the demo needs, builds in release mode, and runs `haneke demo`
#   make test      installs what the tests need, builds (failing on any warning), runs every test
#                  (the Redis tests against a private redis-server started for the run) and
#                  compiles every code block of the README and the DocC articles as written
#   make install   installs `haneke`, its man page and shell completions under PREFIX (/usr/local)
#   make test-under-load   the tests beside a CPU hog at 4x the cores (the heavy suites, which run
#                  one test at a time, only with UNDER_LOAD_HEAVY_SUITES=run)

SWIFT ?= swift
SHELL := /bin/bash
PREFIX ?= /usr/local
# The Debian packages each job needs; scripts/install-deps installs the missing ones and says why.
# Every build needs libvips, the tool's included (`haneke thumbnail` resizes with the Images module).
# The benchmarks also run vipsthumbnail and Pillow (in a virtual environment they make), nginx with
# proxy_cache (measured by wrk) and redis-benchmark as baselines.
BUILD_PACKAGES := liblz4-dev pkg-config libvips-dev libsqlite3-dev libxxhash-dev libcurl4-openssl-dev
TEST_PACKAGES := $(BUILD_PACKAGES) lz4 redis-server redis-tools openssl
# The tests build every integration (Hummingbird, Vapor, metrics, service lifecycle): each is a
# package trait, off for an app that does not ask for it.
TRAITS := --enable-all-traits
# Whether make test-under-load also runs the heavy suites (one test at a time) beside the hog.
UNDER_LOAD_HEAVY_SUITES ?= skip
BENCH_PACKAGES := $(TEST_PACKAGES) libvips-tools python3-venv nginx-light wrk valgrind

.PHONY: all deps build-deps test-deps bench-deps build release test check-snippets test-under-load demo install docs bench bench-smoke check-instructions tsan fuzz fuzz-smoke fuzz-seeds clean

all: build

deps: bench-deps

build-deps:
	@scripts/install-deps $(BUILD_PACKAGES)

test-deps:
	@scripts/install-deps $(TEST_PACKAGES)

bench-deps:
	@scripts/install-deps $(BENCH_PACKAGES)

build: build-deps
	scripts/build-without-warnings

# The tool in release mode, .build/release/haneke (what `make demo` runs and `make install` installs).
release: build-deps
	@echo "Building haneke in release mode (the first build takes several minutes)."
	SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT) build -c release --product haneke

# The tests run beside a private redis-server (scripts/with-redis passes its URL in
# HANEKE_REDIS_URL); if it cannot start, the run fails rather than skipping the Redis tests.
# scripts/run-tests runs the heavy suites in a second process, one test at a time; the blocking
# watchdog fails either process if a job blocks one of Swift's cooperative threads.
test: test-deps
	scripts/check-vips-shim
	scripts/build-without-warnings --build-tests $(TRAITS)
	SWIFT=$(SWIFT) scripts/with-redis scripts/run-tests $(TRAITS)
	$(MAKE) check-snippets

# Every ```swift block of README.md, the examples' READMEs and the DocC articles, type-checked as
# written against the debug build (every trait); first the check's own tests, blocks that must fail.
check-snippets: build-deps
	scripts/build-without-warnings --build-tests $(TRAITS)
	SWIFT=$(SWIFT) scripts/check-snippets --expect-failure "cannot find 'URL' in scope" scripts/snippet-fixtures/missing-import.md
	SWIFT=$(SWIFT) scripts/check-snippets --expect-failure "imports StoreFolders, which is neither a product" scripts/snippet-fixtures/internal-module.md
	SWIFT=$(SWIFT) scripts/check-snippets --expect-failure "no 'async' operations occur within 'await' expression" scripts/snippet-fixtures/warning.md
	SWIFT=$(SWIFT) scripts/check-snippets

# The same tests beside a CPU hog that keeps the load average at 4x the cores (scripts/under-load);
# it prints the load average it saw and the suite's wall time.
test-under-load: test-deps
	scripts/build-without-warnings --build-tests $(TRAITS)
	SWIFT=$(SWIFT) HANEKE_HEAVY_SUITES=$(UNDER_LOAD_HEAVY_SUITES) scripts/under-load scripts/with-redis scripts/run-tests $(TRAITS)

demo: release
	.build/release/haneke demo

# `haneke`, its man page and its bash, zsh and fish completions, under $(DESTDIR)$(PREFIX).
install: release
	SWIFT=$(SWIFT) scripts/install-tool "$(DESTDIR)$(PREFIX)"

# One DocC site for every library product, with every trait, in .build/docs/site; any warning fails
# it. Serve it to read it (the script prints how): DocC pages are blank opened from disk.
docs: build-deps
	scripts/build-docs

# Benchmarks: a separate package (Benchmarks/), built in release mode, with the `haneke` tool beside
# the benchmarks (workload 12 runs it). `make bench` prints the table and writes bench-results.json;
# `make bench-smoke` runs every benchmark a few iterations.
BENCH_BUILD := cd Benchmarks && $(SWIFT) build -c release && $(SWIFT) build -c release --product haneke

bench: bench-deps
	$(BENCH_BUILD) && .build/release/HanekeBenchmarks --json ../bench-results.json
	scripts/check-instruction-counts

bench-smoke: bench-deps
	$(BENCH_BUILD) && .build/release/HanekeBenchmarks --smoke --json .build/bench-smoke.json
	cd Benchmarks && .build/release/HanekeBenchmarks --hit-ratio-check && .build/release/HanekeBenchmarks --hit-ratio --requests 20000 --keys 2000 > .build/hit-ratio-smoke.jsonl
	scripts/check-instruction-counts

# The hot paths' instructions per operation (valgrind) against Benchmarks/Thresholds: over one by
# more than 5 % fails. `scripts/check-instruction-counts --record` writes new thresholds.
check-instructions: bench-deps
	$(BENCH_BUILD)
	scripts/check-instruction-counts

# Reliability: the stress suite under ThreadSanitizer, and libFuzzer targets (Fuzz/) run for
# FUZZ_SECONDS each (fuzz-smoke: 10 s each, for CI). Seeds are in Fuzz/Corpus (make fuzz-seeds
# writes them with the library); what the fuzzer finds goes to Fuzz/.corpus (not committed), and a
# crash stops the run with its input saved there.
FUZZ_SECONDS ?= 120
FUZZ_TARGETS := FuzzEntryFile FuzzLZ4Frame FuzzJSON FuzzSQLiteDatabase

# The blocking watchdog is off under ThreadSanitizer, which runs every job many times slower and
# defers signals to its own points: the watchdog's measurements would mean nothing there.
# HANEKE_ONLY_TESTS (Package.swift) builds only the stress suite's test target and what it needs;
# the build and the run read the manifest alike.
tsan: export HANEKE_ONLY_TESTS = StressTests
tsan: test-deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	HANEKE_WATCHDOG=off TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter StressTests

fuzz: build-deps
	SWIFT=$(SWIFT) scripts/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=10

fuzz-seeds:
	cd Fuzz && $(SWIFT) build -c release --product FuzzSeeds --scratch-path .build-seeds && .build-seeds/release/FuzzSeeds Corpus

clean:
	rm -rf .build .build-tsan Benchmarks/.build Fuzz/.build Fuzz/.build-fuzz Fuzz/.build-seeds Fuzz/.corpus
