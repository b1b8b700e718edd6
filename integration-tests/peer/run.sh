#!/usr/bin/env bash
# The peer tier: the client against SecantusDB, an independent MongoDB-compatible server by a
# third party (PyPI SecantusDB, pinned below), once as a single-member replica set `secantus`
# and once as a standalone. It installs the server in a git-ignored venv (.venv-peer), starts it
# on a free 127.0.0.1 port, runs the tests that take a deployment from MONGODB_URI against it
# (the client's end-to-end tests, the examples' smoke runs and the demo, and the vendored unified
# suites judged against expected-failures/client.txt + secantusdb.txt), and stops it by its
# process id, also on failure.
#
#   peer/run.sh                  # both deployments, one after the other (`make test-peer`)
#   peer/run.sh rs               # one of them: `make test` runs rs and standalone side by side,
#   peer/run.sh standalone       # beside the compose tier (each its own server and port)
#   peer/run.sh --install        # only the venv (make runs it once before the modes in parallel)
#
# TESTS and FILTERS override the test targets and the tests' names (see docker/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV_PEER:-.venv-peer}
VERSION=0.7.0b3
CARGO=${CARGO:-cargo}

installed=$("$VENV/bin/python" -m pip show SecantusDB 2>/dev/null || true)
if ! grep -qx "Version: $VERSION" <<<"$installed"; then
  echo "peer: installing SecantusDB==$VERSION into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "SecantusDB==$VERSION"
fi
[ "${1:-}" = --install ] && exit 0
MODES=("$@")
[ ${#MODES[@]} = 0 ] && MODES=(rs standalone)
for mode in "${MODES[@]}"; do
  case $mode in rs | standalone) ;; *) echo "usage: $0 [--install | rs | standalone ...]" >&2; exit 2 ;; esac
done

PID=""
LOG=""
stop() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  PID=""
}
cleanup() {
  stop
  # An `if`, not `&&`: the trap's last status would become the script's.
  if [ -n "$LOG" ]; then rm -f "$LOG"; fi
}
trap cleanup EXIT

# start rs|standalone: starts the server and sets URI.
start() {
  local mode=$1 port extra=()
  port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  [ "$mode" = standalone ] && extra=(--standalone)
  LOG=$(mktemp)
  "$VENV/bin/secantusd-py" --host 127.0.0.1 --port "$port" --storage-path :memory: \
    --enable-test-commands --log-level WARNING "${extra[@]}" >"$LOG" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do
    if "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null; then
      break
    fi
    if ! kill -0 "$PID" 2>/dev/null; then
      echo "peer: secantusd-py ($mode) exited:"; cat "$LOG"; exit 1
    fi
    sleep 0.1
  done
  if [ "$mode" = standalone ]; then
    # A plain seed, as the official drivers' test harnesses give a standalone: the client
    # discovers it (Unknown, then Single); the unified SDAM tests expect exactly that.
    URI="mongodb://127.0.0.1:$port/"
  else
    URI="mongodb://127.0.0.1:$port/?replicaSet=secantus"
  fi
  echo "peer: SecantusDB $VERSION ($mode) at $URI, pid $PID"
}

status=0
for mode in "${MODES[@]}"; do
  started=$SECONDS
  start "$mode"
  # The same script a real deployment is tested with (docker/run.sh), so its path is exercised.
  if ! SPEC_EXPECTED=secantusdb CARGO="$CARGO" integration-tests/docker/run.sh --uri "$URI"; then
    echo "peer ($mode): FAILED"
    echo "--- secantusd-py log (last 30 lines)"; tail -30 "$LOG"
    status=1
  fi
  stop
  rm -f "$LOG"; LOG=""
  echo "peer ($mode): $([ $status = 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s"
done
exit $status
