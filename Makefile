# mongo-actors: common tasks. `make help` lists them.
CARGO ?= cargo
SPEC_ROOT ?= integration-tests/spec-tests

.PHONY: help fuzz build test spec fmt fmt-check lint demo watch ci bench-selection bench-sim bench-pool bench-actors sim sim-check-python

help:
	@echo "make demo    the main job: an embedded 3-member replica set, a workload, a live topology table, a stepdown and its failover timeline"
	@echo "             DEMO_ARGS='--duration 20' or DEMO_ARGS='--uri mongodb://...' (a real deployment: no stepdown)"
	@echo "make watch URI=mongodb://...  the live topology table and SDAM events (mongo-actors watch)"
	@echo "make test    run every test in the workspace (installs chromium for the status page's browser test), then the peer tier and the compose tier, then make test-bson3 (what CI runs)"
	@echo "make test-bson3  on bson 3 (the default is bson 2): the unit tests, the compatibility programs and a reduced spec run"
	@echo "make test-compose  a replica set of simulator containers (docker or podman; installed and started as root if needed): end-to-end tests, unified suites, engine-driven chaos"
	@echo "make test-peer  the client's end-to-end tests, the examples and the demo against SecantusDB (pip, in .venv-peer)"
	@echo "make spec    run the spec runner; SPEC_ROOT=DIR to run another upstream-layout directory"
	@echo "make build   build the workspace"
	@echo "make fuzz    run each cargo-fuzz target for FUZZ_RUNS executions (default 10 million) or FUZZ_SECONDS (default 1800), whichever first; installs nightly + cargo-fuzz if missing"
	@echo "make fmt     format the code"
	@echo "make lint    clippy with -D warnings (make test LINT=1: the tests' build lints as it compiles)"
	@echo "make bench-selection  criterion benchmark of server selection (ns per selection)"
	@echo "make sim     run the cluster simulator: SIM_ARGS='rs --members 3' (default), 'standalone', 'sharded --mongos 2', 'lb --services 2'"
	@echo "make sim-check-python  check the simulator with PyMongo (venv in .venv-sim; not part of CI)"
	@echo "make bench-sim  simulator capacity: raw pipelined pings vs the official driver (release)"
	@echo "make bench-actors  actors vs pure selection, find_one throughput and stepdown->write time vs the official driver (release)"
	@echo "make bench-pool  cold-pool check-out: 1,000 concurrent pings, maxPoolSize 100, ours vs the official driver (release)"
	@echo "make bench   every benchmark vs the official mongodb crate in one release run; writes BENCHMARKS.md (BENCH_QUICK=1: short)"
	@echo "make soak    the cancellation model for longer: SOAK_SEQUENCES random sequences (default 3000, ~10 min); CANCEL_MODEL_SEED=N replays one"
	@echo "make chaos   a 60 s chaos soak (CHAOS_ARGS='--duration 5m --members 5 --seed 42'): faults under w:majority writes, then lost-write, timing and leak checks"
	@echo "make examples  run every example once with --smoke against its embedded simulator"
	@echo "make api-gap  what of the official mongodb crate's public API ours lacks (rustdoc JSON, nightly): writes integration-tests/compat/API-GAPS.md"

build:
	$(CARGO) build --workspace --all-targets

# After the workspace's tests, two deployments at a time, each its own server, port and cargo
# process (the tests mostly wait on their server): SecantusDB as a replica set beside SecantusDB
# as a standalone and then the compose replica set. Each side's output is printed whole when it
# ends. (All three at once was slower on 2 cores, and timing-sensitive cases flaked.)
# Each phase prints the time it ended, for a profile of the run (`.ci/run` shows them).
# The test dependencies (chromium, a container engine, SecantusDB) install while the workspace
# compiles; the tests start once both are done. An install that fails is reported here and
# again by what needs it (the browser test fails, the compose tier says it could not run).
# LINT=1 (what `.ci/run` uses) lints while it compiles: clippy-driver is the workspace's compiler
# wrapper (as `cargo clippy` makes it for a check) with -D warnings, and every target is built,
# so one build serves the tests and `make lint` (a second, check-only build of every crate costs
# three minutes on 2 cores). Exported, so each cargo run of the tiers sees the same build.
ifeq ($(LINT),1)
export RUSTC_WORKSPACE_WRAPPER := $(shell command -v clippy-driver)
ifeq ($(RUSTC_WORKSPACE_WRAPPER),)
$(error LINT=1 needs clippy-driver: rustup component add clippy)
endif
export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
TEST_TARGETS := --all-targets
endif
test:
	@echo "[make test] start: $$(date +%T)"
	@deps_log=$$(mktemp); integration-tests/test-deps.sh >"$$deps_log" 2>&1 & deps=$$!; \
	$(CARGO) test --workspace --no-run $(TEST_TARGETS) || { wait $$deps; cat "$$deps_log"; exit 1; }; \
	echo "[make test] workspace compiled: $$(date +%T)"; \
	wait $$deps; cat "$$deps_log"; rm -f "$$deps_log"
	$(CARGO) test --workspace --no-fail-fast
	@echo "[make test] workspace tests end: $$(date +%T)"
	$(MAKE) -j2 --output-sync=target test-peer-rs test-standalone-then-compose
	@echo "[make test] peer and compose tiers end: $$(date +%T)"
	$(MAKE) test-bson3
	@echo "[make test] bson 3 end: $$(date +%T)"

# Everything above runs on bson 2, the default (as the official crate's). The other bson:
# `--features bson-3` turns it on in every crate that has the feature (bson 3 wins over bson 2 when
# both are on, as in the official crate), the official crate's included; then the unit tests, the
# compatibility programs against this client, and a reduced spec run (the suites that need no
# deployment, the seedlist, and the unified suites that move the most documents).
# (SPEC_SUITES filters every kind of suite: the first nine are all of those that need no deployment.)
BSON3_SPEC_SUITES ?= sdam,connection-string,uri-options,auth,server-selection,max-staleness,read-write-concern,cmap,initial-dns-seedlist-discovery,crud,gridfs,change-streams,command-logging-and-monitoring
.PHONY: test-bson3
test-bson3:
	$(CARGO) test --workspace --features bson-3 --no-fail-fast --lib --test compat_programs
	SPEC_SUITES=$(BSON3_SPEC_SUITES) $(CARGO) test --workspace --features bson-3 --no-fail-fast --test integration -- all_spec_suites::

.PHONY: test-standalone-then-compose
test-standalone-then-compose:
	$(MAKE) test-peer-standalone; a=$$?; $(MAKE) test-compose; b=$$?; [ $$a = 0 ] && [ $$b = 0 ]

# The compose tier: three `mongo-sim member` containers (image built from local files), the
# end-to-end tests, examples, demo and unified suites through run.sh, and a chaos run faulting
# the containers through the engine. Installs and starts docker as root when needed; says so and
# passes when no engine can be started.
.PHONY: test-compose
test-compose:
	CARGO=$(CARGO) integration-tests/docker/compose-test.sh

# The peer tier alone: the client against SecantusDB (installed in .venv-peer), replica set and standalone.
.PHONY: test-peer test-peer-rs test-peer-standalone peer-venv
test-peer:
	CARGO=$(CARGO) integration-tests/peer/run.sh
test-peer-rs:
	CARGO=$(CARGO) integration-tests/peer/run.sh rs
test-peer-standalone:
	CARGO=$(CARGO) integration-tests/peer/run.sh standalone
peer-venv:
	integration-tests/peer/run.sh --install

spec:
	$(CARGO) run -q -p integration-tests --bin spec-runner -- --root $(SPEC_ROOT)

# Fuzz targets live in fuzz/ (outside the workspace; nightly + cargo-fuzz).
FUZZ_SECONDS ?= 1800
FUZZ_RUNS ?= 10000000
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) fuzz/run.sh

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

bench-selection:
	$(CARGO) bench -p mongo-actors-selection --bench selection

# The simulator, as a standalone process that prints its URI first.
SIM_ARGS ?= rs --members 3
sim:
	$(CARGO) run -q -p mongo-sim -- $(SIM_ARGS)

# PyMongo against the simulator: an independent official driver as a second opinion.
VENV_SIM ?= .venv-sim
SIM_BIN ?= $(or $(CARGO_TARGET_DIR),target)/debug/mongo-sim
sim-check-python:
	test -x $(VENV_SIM)/bin/python || python3 -m venv $(VENV_SIM)
	$(VENV_SIM)/bin/python -m pip install -q pymongo
	$(CARGO) build -p mongo-sim
	$(VENV_SIM)/bin/python integration-tests/sim/python/sim_check.py --sim $(SIM_BIN)

bench-sim:
	$(CARGO) bench -p integration-tests --bench sim_capacity

bench-pool:
	$(CARGO) bench -p integration-tests --bench pool_checkout

bench-actors:
	$(CARGO) bench -p integration-tests --bench actors

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The main job: the `mongo-actors demo` binary (examples crate). `mongo-actors --help` lists
# the tools (watch, select).
DEMO_ARGS ?=
demo:
	$(CARGO) run -q -p mongo-actors-examples --bin mongo-actors -- demo $(DEMO_ARGS)

URI ?=
watch:
	$(CARGO) run -q -p mongo-actors-examples --bin mongo-actors -- watch $(URI)

ci: fmt-check test lint

.PHONY: examples
examples:
	$(CARGO) build -p mongo-actors-examples --examples
	$(CARGO) test -p mongo-actors-examples --test integration smoke::

# Chaos soak: faults under w:majority writes and mixed reads, then lost-write, timing and leak
# checks; CHAOS_ARGS='--duration 5m --members 5 --seed 42' to change it. An optimized build, as
# users ship: its timing checks allow timeoutMS + 100 ms, and an unoptimized build does several
# times the work per operation, so a 10,000-operation burst spends that margin completing its own
# timeouts.
CHAOS_ARGS ?= --duration 60s
# The cancellation model (integration-tests/tests/cancellation/model.rs) over many more random
# sequences than make test runs; the seed is printed, CANCEL_MODEL_SEED=N replays it.
SOAK_SEQUENCES ?= 3000
.PHONY: soak
soak:
	CANCEL_MODEL_SEQUENCES=$(SOAK_SEQUENCES) $(CARGO) test -p integration-tests --test integration cancellation::model -- --nocapture

.PHONY: chaos
chaos:
	$(CARGO) run -q --release -p integration-tests --bin chaos -- $(CHAOS_ARGS)

# Every benchmark scenario against the official driver in one release run; writes BENCHMARKS.md.
# BENCH_QUICK=1 for a ~1-2 min run (same scenarios, shorter).
.PHONY: bench
bench:
	$(CARGO) bench -p integration-tests --bench suite -- $(if $(filter 1,$(BENCH_QUICK)),--quick,)

# The official API this crate still lacks (issue 40): the rustdoc JSON of both crates (the
# official one at the version and features of our dev-dependency, through
# integration-tests/compat/official-api), compared path by path.
APIDOC_TARGET ?= target/apidoc
.PHONY: api-gap
api-gap:
	cp -n Cargo.lock integration-tests/compat/official-api/Cargo.lock
	CARGO_TARGET_DIR=$(abspath $(APIDOC_TARGET)) $(CARGO) +nightly rustdoc -q --manifest-path integration-tests/compat/official-api/Cargo.toml -p mongodb --lib -- -Z unstable-options --output-format json
	CARGO_TARGET_DIR=$(APIDOC_TARGET) $(CARGO) +nightly rustdoc -q -p mongo-actors --features sync --lib -- -Z unstable-options --output-format json
	for c in mongo-actors-protocol mongo-actors-selection; do CARGO_TARGET_DIR=$(APIDOC_TARGET) $(CARGO) +nightly rustdoc -q -p $$c --lib -- -Z unstable-options --output-format json || exit 1; done
	python3 integration-tests/compat/api_gap.py $(APIDOC_TARGET)/doc/mongodb.json $(APIDOC_TARGET)/doc/mongo_actors.json $(APIDOC_TARGET)/doc/protocol.json $(APIDOC_TARGET)/doc/selection.json > integration-tests/compat/API-GAPS.md
	@sed -n 6,9p integration-tests/compat/API-GAPS.md
