#!/usr/bin/env bash
# What `make test` needs besides the Rust toolchain, installed while the workspace compiles (the
# downloads and unpacking then cost the run no time of their own): chromium and chromedriver for
# the status page's browser test (examples/tests/browser.rs), a container engine with compose
# for the compose tier (Debian packages, one apt-get as root), and SecantusDB for the peer tier
# (pip, in .venv-peer).
# Not root and something missing: it says what, and the tests that need it say so again.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=docker/engine.sh
. integration-tests/docker/engine.sh
started=$SECONDS
packages=""
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  packages="chromium chromium-driver"
fi
packages="$packages $(engine_missing)"
status=0
integration-tests/peer/run.sh --install &
pip=$!
if [ -n "${packages// /}" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "test-deps: apt-get install$packages" | tr -s ' '
    # shellcheck disable=SC2086
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null || status=1
  else
    echo "test-deps: not root; make test needs: sudo apt-get install$packages" | tr -s ' '
  fi
fi
wait "$pip" || status=1
echo "test-deps: $([ $status = 0 ] && echo done || echo FAILED) in $((SECONDS - started)) s"
exit $status
