#!/usr/bin/env bash
# The client against a real deployment, in one command: its end-to-end tests (client_*, pool_e2e),
# the official driver's scenarios, the examples' smoke runs and the demo, and the vendored unified
# spec suites, all through MONGODB_URI (see integration-tests/src/deployment.rs).
#
#   integration-tests/docker/run.sh              # starts docker-compose.yml's mongo:7 replica set
#                                                # rs0, runs everything, and takes it down again
#   integration-tests/docker/run.sh --uri URI    # against URI instead (no container engine needed)
#
# The unified suites are judged against expected-failures/client.txt (what the client lacks on
# every server) plus the list SPEC_EXPECTED names, if any: the peer tier (peer/run.sh) runs this
# script with --uri against SecantusDB and SPEC_EXPECTED=secantusdb, so the path it takes is
# exercised in every `make test`. Tests that need the simulator's controls, more members than the
# deployment has, or a load balancer (MONGODB_LB_URI) print NOT APPLICABLE with the reason.
#
# TESTS overrides the cargo test targets. Exit status: cargo's (0 when everything passed).
set -euo pipefail
cd "$(dirname "$0")/../.."
CARGO=${CARGO:-cargo}
COMPOSE_FILE=integration-tests/docker/docker-compose.yml
RS_URI="mongodb://localhost:27017,localhost:27018,localhost:27019/?replicaSet=rs0"

URI=""
case "${1:-}" in
  --uri)
    URI=${2:?"--uri needs a connection string"}
    ;;
  "") ;;
  *)
    echo "usage: $0 [--uri URI]" >&2
    exit 2
    ;;
esac

if [ -z "$URI" ]; then
  if ! command -v docker >/dev/null 2>&1; then
    echo "docker/run.sh: no docker command here; start a deployment yourself and pass --uri URI" >&2
    exit 2
  fi
  down() { docker compose -f "$COMPOSE_FILE" down >/dev/null 2>&1 || true; }
  trap down EXIT
  docker compose -f "$COMPOSE_FILE" up -d --wait mongo1 mongo2 mongo3
  docker compose -f "$COMPOSE_FILE" run --rm rs-init
  URI=$RS_URI
fi

# One at a time: the tests share the deployment, and failCommand is one fail point per server.
# --workspace keeps the features of `cargo test --workspace`, so nothing is rebuilt.
TESTS=${TESTS:-"--workspace --test client_crud --test client_ops --test client_csot --test client_sessions --test cancellation \
  --test client_e2e --test client_config --test client_lb --test client_lb_sdam --test client_srv --test pool_e2e \
  --test official_driver --test otel --test compat_programs --test smoke --test cli --test spec"}
echo "docker/run.sh: the client's end-to-end tests and the unified suites against $URI"
# shellcheck disable=SC2086
MONGODB_URI="$URI" $CARGO test --no-fail-fast $TESTS -- --test-threads=1
