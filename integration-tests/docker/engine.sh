# Container engine helpers for run.sh and compose-test.sh (sourced, not run).
#
# engine_detect: sets ENGINE (docker or podman; a preset ENGINE is the only one tried) and
#   COMPOSE (the compose command: `docker compose` v2, `docker-compose` v1, or `podman-compose`);
#   returns 1 when there is none.
# engine_start: as root, installs docker.io and docker-compose (Debian; with ENGINE=podman:
#   podman, runc and podman-compose) when no engine is there, and starts dockerd when no
#   daemon answers (machines without systemd); sets ENGINE_STARTED to the daemon's pid when it
#   started one. Returns 1, with the reason in ENGINE_WHY, when no engine can be started.
# engine_stop: stops the daemon engine_start started, if any.
# engine_missing: the packages engine_start would install (for installing them ahead of time).

ENGINE_STARTED=""
ENGINE_WHY=""

engine_detect() {
  # ENGINE=docker|podman, when set, is the only engine considered.
  local want=${ENGINE:-}
  ENGINE="" COMPOSE=""
  if [ "$want" != podman ] && command -v docker >/dev/null 2>&1; then
    ENGINE=docker
    if docker compose version >/dev/null 2>&1; then
      COMPOSE="docker compose"
    elif command -v docker-compose >/dev/null 2>&1; then
      COMPOSE=docker-compose
    fi
  elif [ "$want" != docker ] && command -v podman >/dev/null 2>&1; then
    ENGINE=podman
    command -v podman-compose >/dev/null 2>&1 && COMPOSE=podman-compose
  fi
  [ -n "$ENGINE" ] && [ -n "$COMPOSE" ]
}

# Whether the engine answers (a daemon for docker; podman needs none).
engine_up() {
  "$ENGINE" info >/dev/null 2>&1
}

# engine_missing: prints the packages engine_start would install (nothing when an engine with
# compose is there). Run it in a subshell: it sets ENGINE.
engine_missing() {
  local want=${ENGINE:-} packages="docker.io docker-compose"
  [ "$want" = podman ] && packages="podman runc podman-compose"
  if ! engine_detect || { [ "$ENGINE" = docker ] && ! command -v dockerd >/dev/null 2>&1 && ! engine_up; }; then
    echo "$packages"
  fi
}

engine_start() {
  local want=${ENGINE:-} packages="docker.io docker-compose"
  [ "$want" = podman ] && packages="podman runc podman-compose"
  if ! engine_detect || { [ "$ENGINE" = docker ] && ! command -v dockerd >/dev/null 2>&1 && ! engine_up; }; then
    if [ "$(id -u)" != 0 ]; then
      ENGINE_WHY="no container engine with compose here, and installing one needs root (apt-get install $packages)"
      return 1
    fi
    echo "engine: installing $packages"
    # shellcheck disable=SC2086
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null; }; then
      ENGINE_WHY="apt-get install $packages failed"
      return 1
    fi
    ENGINE=$want
    engine_detect || { ENGINE_WHY="$packages installed, but no engine with a compose command"; return 1; }
  fi
  engine_up && return 0
  if [ "$ENGINE" != docker ]; then
    ENGINE_WHY="$ENGINE does not answer ($ENGINE info)"
    return 1
  fi
  if [ "$(id -u)" != 0 ]; then
    ENGINE_WHY="the docker daemon is not running, and starting it needs root"
    return 1
  fi
  # No systemd on these machines: start the daemon and wait for it.
  ENGINE_LOG=$(mktemp)
  setsid dockerd >"$ENGINE_LOG" 2>&1 &
  ENGINE_STARTED=$!
  for _ in $(seq 1 150); do
    engine_up && { echo "engine: started dockerd (pid $ENGINE_STARTED)"; return 0; }
    kill -0 "$ENGINE_STARTED" 2>/dev/null || break
    sleep 0.2
  done
  ENGINE_WHY="dockerd did not come up: $(tail -3 "$ENGINE_LOG" | tr '\n' ' ')"
  engine_stop
  return 1
}

engine_stop() {
  if [ -n "$ENGINE_STARTED" ]; then
    kill "$ENGINE_STARTED" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$ENGINE_STARTED" 2>/dev/null || break
      sleep 0.1
    done
    echo "engine: stopped dockerd (pid $ENGINE_STARTED)"
    ENGINE_STARTED=""
  fi
  [ -n "${ENGINE_LOG:-}" ] && rm -f "$ENGINE_LOG"
  return 0
}
