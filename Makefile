# ExZarr: every target runs scripts/setup first, so a fresh Debian bookworm machine needs nothing else.
SHELL := /bin/bash
VENV = $(shell scripts/setup --venv-path)
export EXZARR_PYTHON = $(VENV)/bin/python
# The newest zarr-python (a second venv; none without Python >= 3.12: its tests then skip).
NEWEST_VENV = $(shell scripts/setup --newest-venv-path)
export EXZARR_PYTHON_NEWEST = $(if $(NEWEST_VENV),$(NEWEST_VENV)/bin/python,)
# rechunker with zarr 2 (a third venv), a peer of bench workload 12
export EXZARR_PYTHON_RECHUNKER = $(shell scripts/setup --rechunker-venv-path)/bin/python
export MIX_ENV ?= dev

.PHONY: setup compile demo test bench fuzz format clean

setup:
	@scripts/setup

compile: setup
	@mix compile --warnings-as-errors

demo: setup
	@MIX_ENV=prod mix run scripts/demo.exs

test:
	@scripts/setup --servers
	@scripts/check-fresh-clone
	@MIX_ENV=test mix compile --warnings-as-errors
	@MIX_ENV=test mix test $(TEST_ARGS)

bench: setup
	@MIX_ENV=prod mix run bench/run.exs $(BENCH_ARGS)

fuzz: setup
	@$(MAKE) -s -C c_src fuzz FUZZ_SECONDS=$${FUZZ_SECONDS:-300}
	@MIX_ENV=test EXZARR_FUZZ_SECONDS=$${FUZZ_SECONDS:-300} mix test test/fuzz

format:
	@mix format

clean:
	@rm -rf _build priv/*.so
	@$(MAKE) -s -C c_src clean
