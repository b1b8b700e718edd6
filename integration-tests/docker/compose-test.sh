#!/usr/bin/env bash
# `make test-compose`: the compose tier from nothing. Makes a container engine available (as
# root: installs docker.io and docker-compose when missing, starts dockerd when no daemon
# answers), then runs run.sh against the simulator's compose replica set (image built here from
# local files): the client's end-to-end tests, the examples, the demo, the unified suites, and the
# chaos run with faults by the engine. run.sh removes its containers, network, image and hosts
# line even on failure; this script stops the daemon if it started it.
#
# When no engine can be started (not root and none running), it says why and exits 0: `make
# test` runs it on every machine, and the tier is then not applicable there.
# COMPOSE_MODE=--mongo uses mongo:7 instead (a machine that can pull it).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=engine.sh
. integration-tests/docker/engine.sh
started=$SECONDS
if ! engine_start; then
  echo "compose tier: NOT RUN: $ENGINE_WHY"
  exit 0
fi
trap engine_stop EXIT
status=0
integration-tests/docker/run.sh "${COMPOSE_MODE:---sim}" || status=$?
# Nothing of ours may be left behind.
left=$("$ENGINE" ps -a --filter name=mongo-actors- -q; "$ENGINE" network ls --filter name=mongo-actors-rs -q; \
  "$ENGINE" images -q --filter label=org.mongo-actors.image=mongo-sim)
if [ -n "$left" ]; then
  echo "compose tier: containers, networks or images left behind: $left"
  status=1
fi
echo "compose tier: $([ $status = 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s"
exit $status
