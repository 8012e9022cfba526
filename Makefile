# ctxattn: the two commands are `make run` and `make test`; both set up what they need.
PY      ?= python3
BUILD   ?= build
VENV    ?= .venv
JOBS    ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all build run test test-cpp test-python venv clean

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

test: test-cpp test-python

clean:
	rm -rf $(BUILD)
