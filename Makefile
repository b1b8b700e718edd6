# mongo-actors: common tasks. `make help` lists them.
CARGO ?= cargo
SPEC_ROOT ?= integration-tests/spec-tests

.PHONY: help build test spec fmt fmt-check lint demo ci bench-selection

help:
	@echo "make demo    run the main job (for now: the spec conformance runner over the vendored suites)"
	@echo "make test    run every test in the workspace (what CI runs)"
	@echo "make spec    run the spec runner; SPEC_ROOT=DIR to run another upstream-layout directory"
	@echo "make build   build the workspace"
	@echo "make fmt     format the code"
	@echo "make lint    clippy with -D warnings"
	@echo "make bench-selection  criterion benchmark of server selection (ns per selection)"

build:
	$(CARGO) build --workspace --all-targets

test:
	$(CARGO) test --workspace

spec:
	$(CARGO) run -q -p integration-tests --bin spec-runner -- --root $(SPEC_ROOT)

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

bench-selection:
	$(CARGO) bench -p mongo-actors-selection --bench selection

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Until the simulator and client land, the main job is the conformance run.
demo: spec

ci: fmt-check test lint
