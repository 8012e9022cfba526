# ctxattn: the two commands are `make run` and `make test`; both set up what they need.
PY      ?= python3
BUILD   ?= build
VENV    ?= .venv
JOBS    ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all build run test test-cpp test-python venv wheel-check clean asan fuzz package-check

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# A representative batch on the best available backend, checked against the reference.
run: build
	$(BUILD)/ctxattn_demo

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

$(VENV)/.stamp: requirements-test.txt
	$(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r requirements-test.txt
	touch $@

venv: $(VENV)/.stamp

test-python: build venv
	CTXATTN_LIBRARY=$(abspath $(BUILD))/libctxattn.so PYTHONPATH=$(abspath python) \
	  $(VENV)/bin/python -m pytest -q tests/python

# `pip install .` (CPU-only CMake) into a throw-away venv, then import and call the installed package.
wheel-check: venv
	bash tests/python/wheel_check.sh $(abspath $(VENV))/bin/python

test: test-cpp test-python

# Installs the library and builds a downstream project against it with find_package(ctxattn).
package-check: build
	rm -rf $(BUILD)/package-check
	cmake --install $(BUILD) --prefix $(abspath $(BUILD))/package-check/prefix > /dev/null
	cmake -S tests/package -B $(BUILD)/package-check/build -DCMAKE_PREFIX_PATH=$(abspath $(BUILD))/package-check/prefix
	cmake --build $(BUILD)/package-check/build
	LD_LIBRARY_PATH=$(abspath $(BUILD))/package-check/prefix/lib $(BUILD)/package-check/build/package_check

# The CPU backend and the C++ suite under AddressSanitizer + UBSan.
asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTXATTN_CUDA=OFF -DCTXATTN_SANITIZE=ON \
	  -DCTXATTN_BUILD_TOOLS=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer over the C edge (CPU backend, ASan + UBSan). FUZZ_SECONDS=30 in CI; longer by hand.
FUZZ_SECONDS ?= 30
fuzz:
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTXATTN_CUDA=OFF \
	  -DCTXATTN_FUZZ=ON -DCTXATTN_BUILD_TESTS=OFF -DCTXATTN_BUILD_TOOLS=OFF
	cmake --build build-fuzz -j $(JOBS)
	mkdir -p build-fuzz/corpus
	build-fuzz/ctxattn_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	  -print_final_stats=1 build-fuzz/corpus

clean:
	rm -rf $(BUILD)

# ctxattn against torch's CPU SDPA on the CPU suite (docs/benchmarks.md; the GPU run is described
# there). Its own library build (no tests, no tools) so that it never rebuilds the test tree.
BENCH_BUILD ?= build-bench
BENCH_OUT   ?= bench-out/cpu
BENCH_ARGS  ?=

.PHONY: bench

$(VENV)/.bench-stamp: $(VENV)/.stamp requirements-bench.txt
	$(VENV)/bin/python -m pip install -q -r requirements-bench.txt
	touch $@

bench: $(VENV)/.bench-stamp
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUDA=OFF \
	  -DCTXATTN_BUILD_TESTS=OFF -DCTXATTN_BUILD_TOOLS=OFF $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target ctxattn
	CTXATTN_LIBRARY=$(abspath $(BENCH_BUILD))/libctxattn.so PYTHONPATH=$(abspath python) \
	  $(VENV)/bin/python -m bench --device cpu --out $(BENCH_OUT) $(BENCH_ARGS)
