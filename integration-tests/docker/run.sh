#!/usr/bin/env bash
# The client against a real deployment, in one command: its end-to-end tests (client_*, pool_e2e),
# the official driver's scenarios, the examples' smoke runs and the demo, and the vendored unified
# spec suites, all through MONGODB_URI (see integration-tests/src/deployment.rs).
#
#   integration-tests/docker/run.sh              # a compose replica set: mongo:7 when it can be
#                                                # pulled, else the simulator image built here
#   integration-tests/docker/run.sh --mongo      # docker-compose.yml: three mongo:7 containers
#   integration-tests/docker/run.sh --sim        # docker-compose.sim.yml: three `mongo-sim member`
#                                                # containers, image built from local files
#   integration-tests/docker/run.sh --uri URI    # against URI instead (no container engine needed)
#
# With compose, the members are mongo1:27017, mongo2:27018 and mongo3:27019 on the network
# mongo-actors-rs, each port published on 127.0.0.1 only; the client reaches them by those names,
# which this script maps to 127.0.0.1 in /etc/hosts (as root; otherwise add
# `127.0.0.1 mongo1 mongo2 mongo3` yourself). After the tests, the chaos run faults the set
# through the engine (kill, pause, network disconnect, restart; CHAOS_SECONDS, 0 = none). On exit,
# even on failure, it removes the containers, the network, the image it built and its hosts line.
#
# The unified suites are judged against expected-failures/client.txt (what the client lacks on
# every server) plus the list SPEC_EXPECTED names, if any (with --sim: compose-sim). The peer tier
# (peer/run.sh) runs this script with --uri against SecantusDB. Tests that need the simulator's
# controls, more members than the deployment has, or a load balancer print NOT APPLICABLE.
#
# TESTS overrides the cargo test targets, FILTERS the tests' names (parts of them), SPEC_SUITES the unified suites run (comma-separated
# parts of suite names, `-name` to leave one out; default: all, with --sim: all but the
# client-side timeout and backpressure suites). ENGINE=docker|podman. Exit status: 0 when everything passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
CARGO=${CARGO:-cargo}
DIR=integration-tests/docker
RS_URI="mongodb://mongo1:27017,mongo2:27018,mongo3:27019/?replicaSet=rs0"
SIM_IMAGE=${SIM_IMAGE:-mongo-actors/mongo-sim:local}
HOSTS_MARK="# mongo-actors compose (integration-tests/docker/run.sh)"

URI="" MODE=auto
case "${1:-}" in
  --uri) URI=${2:?"--uri needs a connection string"}; MODE=uri ;;
  --sim) MODE=sim ;;
  --mongo) MODE=mongo ;;
  "") ;;
  *) echo "usage: $0 [--sim | --mongo | --uri URI]" >&2; exit 2 ;;
esac

if [ "$MODE" != uri ]; then
  # shellcheck source=engine.sh
  . "$DIR/engine.sh"
  if ! engine_detect || ! engine_up; then
    echo "docker/run.sh: no container engine answers here (start one, or use compose-test.sh as root); or pass --uri URI" >&2
    exit 2
  fi
  FILE="" BUILT_IMAGE="" HOSTS_ADDED=""
  COMPOSE_ARGS=()
  if [ "$COMPOSE" = podman-compose ]; then
    # Podman asks runc for higher limits than a container may have on these machines (runc
    # then fails "error setting rlimit type 7"; nproc 32768 is the most that was accepted here).
    nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
    [ "$nofile" = unlimited ] || [ "$nofile" -gt 20000 ] && nofile=20000
    [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
    # Podman copies the host's /etc/hosts into each container, where the line mapping the
    # members' names to 127.0.0.1 (below) would hide the peers: names come from its DNS instead.
    COMPOSE_ARGS=(--podman-run-args "--no-hosts --ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc")
  fi
  down() {
    if [ -n "$FILE" ]; then
      $COMPOSE -p mongo-actors -f "$FILE" down -v --remove-orphans >/dev/null 2>&1 || true
      # What a compose that lacks an option (podman-compose) may leave.
      "$ENGINE" rm -f -v mongo-actors-mongo1 mongo-actors-mongo2 mongo-actors-mongo3 >/dev/null 2>&1 || true
      "$ENGINE" network rm mongo-actors-rs >/dev/null 2>&1 || true
    fi
    # The image, and any earlier build of it that a re-import left untagged.
    if [ -n "$BUILT_IMAGE" ]; then
      "$ENGINE" rmi -f "$BUILT_IMAGE" >/dev/null 2>&1 || true
      "$ENGINE" images -q --filter label=org.mongo-actors.image=mongo-sim | xargs -r "$ENGINE" rmi -f >/dev/null 2>&1 || true
    fi
    if [ -n "$HOSTS_ADDED" ]; then
      # In place: /etc/hosts may be a bind mount that cannot be replaced.
      grep -vF "$HOSTS_MARK" /etc/hosts >/etc/hosts.mongo-actors && cat /etc/hosts.mongo-actors >/etc/hosts
      rm -f /etc/hosts.mongo-actors
    fi
    return 0
  }
  trap down EXIT
  # Interrupted or terminated, it still cleans up (bash runs the EXIT trap only on exit).
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if [ "$MODE" = auto ]; then
    if "$ENGINE" pull -q mongo:7 >/dev/null 2>&1; then MODE=mongo; else
      echo "docker/run.sh: mongo:7 cannot be pulled here (no image registry): the simulator image instead"
      MODE=sim
    fi
  fi
  # The binaries used here (mongo-sim for the image, the mongo-actors CLI, chaos) as `cargo test
  # --workspace` builds them, a no-op after it: `cargo build -p` or `cargo run -p` would build the
  # client again with one package's features alone (two minutes on 2 cores).
  $CARGO test -q --workspace --test integration --no-run
  BIN=${CARGO_TARGET_DIR:-target}/debug
  if [ "$MODE" = sim ]; then
    FILE=$DIR/docker-compose.sim.yml
    ENGINE=$ENGINE "$DIR/image.sh" "$BIN/mongo-sim" "$SIM_IMAGE"
    BUILT_IMAGE=$SIM_IMAGE
    SPEC_EXPECTED=${SPEC_EXPECTED:-compose-sim}
    # What a replica set of processes adds: the client-side timeout and backpressure suites
    # (a third of the time) do not depend on it, and run on the simulator and SecantusDB.
    SPEC_SUITES=${SPEC_SUITES:--client-side-operations-timeout,-client-backpressure}
  else
    FILE=$DIR/docker-compose.yml
  fi
  # The members' names must reach the published ports from here.
  if ! getent hosts mongo1 >/dev/null || ! getent hosts mongo3 >/dev/null; then
    if [ -w /etc/hosts ]; then
      echo "127.0.0.1 mongo1 mongo2 mongo3 $HOSTS_MARK" >>/etc/hosts
      HOSTS_ADDED=1
    else
      echo "docker/run.sh: add '127.0.0.1 mongo1 mongo2 mongo3' to /etc/hosts (needs root)" >&2
      exit 2
    fi
  fi
  started=$SECONDS
  $COMPOSE "${COMPOSE_ARGS[@]}" -p mongo-actors -f "$FILE" up -d mongo1 mongo2 mongo3
  [ "$MODE" = mongo ] && $COMPOSE "${COMPOSE_ARGS[@]}" -p mongo-actors -f "$FILE" run --rm rs-init
  # Compose v1 has no readiness conditions: poll until the client would select a primary.
  for _ in $(seq 1 30); do
    "$BIN/mongo-actors" select --json --wait 2 "$RS_URI" 2>/dev/null \
      | grep -q '"chosen": *"' && break
  done
  echo "docker/run.sh: replica set up in $((SECONDS - started)) s"
  URI=$RS_URI
fi

# One at a time: the tests share the deployment, and failCommand is one fail point per server.
# --workspace keeps the features of `cargo test --workspace`, so nothing is rebuilt.
# Each crate has one test binary (`integration`); FILTERS picks the test modules that run.
TESTS=${TESTS:-"--workspace --test integration --test compat_programs"}
FILTERS=${FILTERS:-"client_crud:: client_ops:: client_csot:: client_sessions:: cancellation:: client_e2e:: \
  client_config:: client_lb:: client_lb_sdam:: client_srv:: pool_e2e:: official_driver:: otel:: \
  every_program_passes smoke:: cli:: all_spec_suites::"}
echo "docker/run.sh: the client's end-to-end tests and the unified suites against $URI"
status=0
# shellcheck disable=SC2086
MONGODB_URI="$URI" SPEC_EXPECTED="${SPEC_EXPECTED:-}" SPEC_SUITES="${SPEC_SUITES:-}" $CARGO test --no-fail-fast $TESTS -- $FILTERS --test-threads=1 || status=$?

CHAOS_SECONDS=${CHAOS_SECONDS:-45}
if [ "$MODE" != uri ] && [ "$CHAOS_SECONDS" != 0 ]; then
  echo "docker/run.sh: chaos through $ENGINE for ${CHAOS_SECONDS} s (kill, pause, network disconnect, restart)"
  "$BIN/chaos" --duration "${CHAOS_SECONDS}s" --burst 0 --timeout-ms 2000 \
    --uri "$URI" --engine "$ENGINE" --network mongo-actors-rs \
    --container mongo-actors-mongo1,mongo1,mongo1:27017 \
    --container mongo-actors-mongo2,mongo2,mongo2:27018 \
    --container mongo-actors-mongo3,mongo3,mongo3:27019 || status=1
fi
exit $status
