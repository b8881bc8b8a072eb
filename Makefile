# Quick start on a fresh Debian/Ubuntu machine with Swift installed:
#   make demo   installs what is missing, builds, and runs the main job
#   make test   installs what is missing, builds (failing on any warning), and runs every test
#               (the Redis tests against a private redis-server started for the run)

SWIFT ?= swift
# Debian packages the build and the tests need (later modules add theirs here).
DEBIAN_PACKAGES := liblz4-dev lz4 pkg-config redis-server redis-tools

.PHONY: all deps build test demo bench bench-smoke clean

all: build

deps:
	@scripts/install-deps $(DEBIAN_PACKAGES)

build: deps
	scripts/build-without-warnings

# The tests run beside a private redis-server (scripts/with-redis passes its URL in
# HANEKE_REDIS_URL); if it cannot start, the run fails rather than skipping the Redis tests.
test: deps
	scripts/build-without-warnings --build-tests
	scripts/with-redis $(SWIFT) test --skip-build

demo: deps
	$(SWIFT) run -c release haneke demo

# Benchmarks: a separate package (Benchmarks/), built in release mode. `make bench` prints the
# table and writes bench-results.json; `make bench-smoke` runs every benchmark a few iterations.
bench: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/HanekeBenchmarks --json ../bench-results.json

bench-smoke: deps
	cd Benchmarks && $(SWIFT) build -c release && .build/release/HanekeBenchmarks --smoke --json .build/bench-smoke.json

clean:
	rm -rf .build Benchmarks/.build
