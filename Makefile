# mongo-actors: common tasks. `make help` lists them.
CARGO ?= cargo
SPEC_ROOT ?= integration-tests/spec-tests

.PHONY: help build test spec fmt fmt-check lint demo ci bench-selection bench-sim bench-pool bench-actors sim sim-check-python

help:
	@echo "make demo    run the main job (for now: the spec conformance runner over the vendored suites)"
	@echo "make test    run every test in the workspace (what CI runs)"
	@echo "make spec    run the spec runner; SPEC_ROOT=DIR to run another upstream-layout directory"
	@echo "make build   build the workspace"
	@echo "make fmt     format the code"
	@echo "make lint    clippy with -D warnings"
	@echo "make bench-selection  criterion benchmark of server selection (ns per selection)"
	@echo "make sim     run the cluster simulator: SIM_ARGS='rs --members 3' (default), 'standalone', 'sharded --mongos 2', 'lb --services 2'"
	@echo "make sim-check-python  check the simulator with PyMongo (venv in .venv-sim; not part of CI)"
	@echo "make bench-sim  simulator capacity: raw pipelined pings vs the official driver (release)"
	@echo "make bench-actors  actors vs pure selection, find_one throughput and stepdown->write time vs the official driver (release)"
	@echo "make bench-pool  cold-pool check-out: 1,000 concurrent pings, maxPoolSize 100, ours vs the official driver (release)"

build:
	$(CARGO) build --workspace --all-targets

test:
	$(CARGO) test --workspace --no-fail-fast

spec:
	$(CARGO) run -q -p integration-tests --bin spec-runner -- --root $(SPEC_ROOT)

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

bench-selection:
	$(CARGO) bench -p mongo-actors-selection --bench selection

# The simulator, as a standalone process that prints its URI first.
SIM_ARGS ?= rs --members 3
sim:
	$(CARGO) run -q -p integration-tests --bin mongo-sim -- $(SIM_ARGS)

# PyMongo against the simulator: an independent official driver as a second opinion.
VENV_SIM ?= .venv-sim
SIM_BIN ?= $(or $(CARGO_TARGET_DIR),target)/debug/mongo-sim
sim-check-python:
	test -x $(VENV_SIM)/bin/python || python3 -m venv $(VENV_SIM)
	$(VENV_SIM)/bin/python -m pip install -q pymongo
	$(CARGO) build -p integration-tests --bin mongo-sim
	$(VENV_SIM)/bin/python integration-tests/python/sim_check.py --sim $(SIM_BIN)

bench-sim:
	$(CARGO) bench -p integration-tests --bench sim_capacity

bench-pool:
	$(CARGO) bench -p integration-tests --bench pool_checkout

bench-actors:
	$(CARGO) bench -p integration-tests --bench actors

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Until the simulator and client land, the main job is the conformance run.
demo: spec

ci: fmt-check test lint

# Every benchmark scenario against the official driver in one release run; writes BENCHMARKS.md.
# BENCH_QUICK=1 for a ~1-2 min run (same scenarios, shorter).
.PHONY: bench
bench:
	$(CARGO) bench -p integration-tests --bench suite -- $(if $(filter 1,$(BENCH_QUICK)),--quick,)
