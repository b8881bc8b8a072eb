# Quick start on a fresh Debian/Ubuntu machine with Swift installed:
#   make demo   installs what is missing, builds, and runs the main job
#   make test   installs what is missing, builds (failing on any warning), and runs every test

SWIFT ?= swift
# Debian packages the build and the tests need (later modules add theirs here).
DEBIAN_PACKAGES :=

.PHONY: all deps build test demo clean

all: build

deps:
	@scripts/install-deps $(DEBIAN_PACKAGES)

build: deps
	scripts/build-without-warnings

test: deps
	scripts/build-without-warnings --build-tests
	$(SWIFT) test --skip-build

demo: deps
	$(SWIFT) run -c release QuickStart

clean:
	rm -rf .build
