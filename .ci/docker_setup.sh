#!/usr/bin/env bash
# Docker engine and sandbox image for the Docker-backend tests (tests/test_sandbox_docker.py).
#
# What it does, in order, each step skipped when already done (the script is idempotent):
#   1. installs Debian's docker.io (apt-get, --no-install-recommends) when dockerd is missing;
#   2. unless an engine already answers ($DOCKER_HOST, then /var/run/docker.sock), starts dockerd
#      in the background with its own socket unix:///run/codea1-docker/docker.sock, data root
#      /var/lib/codea1-docker, no bridge and no iptables (sandbox containers use --network none);
#      its log goes to /run/codea1-docker/dockerd.log;
#   3. builds the image codea1-sandbox:latest (override: CODEA1_DOCKER_IMAGE) with `docker import`
#      of a minimal root filesystem made from this machine's files: a Python 3 interpreter, its
#      standard library (no site-packages) and the shared libraries they load. Nothing is pulled.
# DockerSandbox finds the engine at $DOCKER_HOST, /var/run/docker.sock or the socket above.
# It never fails the CI run: on any problem it prints why and exits 0, and the tests skip.
set -u

SOCK_DIR=/run/codea1-docker
SOCK="unix://$SOCK_DIR/docker.sock"
DATA_ROOT=/var/lib/codea1-docker
IMAGE="${CODEA1_DOCKER_IMAGE:-codea1-sandbox:latest}"

log() { echo "docker_setup: $*"; }

engine_answers() {  # $1: docker host URL
  DOCKER_HOST="$1" timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

install_engine() {
  command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1 && return 0
  log "installing docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq --no-install-recommends docker.io >/dev/null 2>&1
}

find_or_start_engine() {
  for host in "${DOCKER_HOST:-}" "unix:///var/run/docker.sock" "$SOCK"; do
    if [ -n "$host" ] && engine_answers "$host"; then
      HOST="$host"
      return 0
    fi
  done
  mkdir -p "$SOCK_DIR" "$DATA_ROOT"
  log "starting dockerd on $SOCK"
  nohup dockerd --host "$SOCK" --data-root "$DATA_ROOT" --exec-root "$SOCK_DIR/exec" \
    --pidfile "$SOCK_DIR/dockerd.pid" --bridge=none --iptables=false --ip-masq=false \
    >"$SOCK_DIR/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    if engine_answers "$SOCK"; then
      HOST="$SOCK"
      return 0
    fi
    sleep 1
  done
  log "dockerd did not answer within 60 s; last log lines:"
  tail -n 5 "$SOCK_DIR/dockerd.log" 2>/dev/null
  return 1
}

copy_with_parents() {  # copy a file (following links) and keep its link name too
  local src="$1" root="$2"
  mkdir -p "$root$(dirname "$src")"
  cp -L "$src" "$root$src" 2>/dev/null || true
  local real
  real=$(readlink -f "$src")
  if [ "$real" != "$src" ]; then
    mkdir -p "$root$(dirname "$real")"
    cp -L "$src" "$root$real" 2>/dev/null || true
  fi
}

image_runs() {
  DOCKER_HOST="$HOST" timeout 60 docker run --rm --network none "$IMAGE" /usr/bin/python3 -S -c \
    'import ctypes, json, resource, socket; print("docker_setup: image runs Python", __import__("sys").version.split()[0])'
}

build_image() {
  if DOCKER_HOST="$HOST" docker image inspect "$IMAGE" >/dev/null 2>&1; then
    if image_runs; then
      log "image $IMAGE already present"
      return 0
    fi
    log "image $IMAGE is broken; rebuilding"
    DOCKER_HOST="$HOST" docker image rm -f "$IMAGE" >/dev/null 2>&1
  fi
  local py
  py=$(readlink -f /usr/bin/python3 2>/dev/null || true)
  [ -x "$py" ] || py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
  local stdlib dynload root
  stdlib=$("$py" -S -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
  dynload=$("$py" -S -c 'import _ctypes, os; print(os.path.dirname(_ctypes.__file__))')
  root=$(mktemp -d /tmp/codea1-rootfs-XXXXXX)
  log "building $IMAGE from $py ($stdlib)"
  for link in bin sbin lib lib64; do
    if [ -L "/$link" ]; then
      mkdir -p "$root/$(readlink "/$link")"
      ln -s "$(readlink "/$link")" "$root/$link"
    fi
  done
  mkdir -p "$root/usr/bin" "$root/tmp" "$root/proc" "$root/dev" "$root/sys" "$root/etc" \
    "$root/sandbox" "$root/run/codea1"
  chmod 1777 "$root/tmp"
  copy_with_parents "$py" "$root"
  ln -sf "$py" "$root/usr/bin/python3"
  mkdir -p "$root$stdlib"
  tar -C "$stdlib" --exclude=site-packages --exclude=dist-packages --exclude=test \
    --exclude=idlelib --exclude=tkinter --exclude=turtledemo --exclude=ensurepip \
    --exclude=__pycache__ -cf - . | tar -C "$root$stdlib" -xf -
  if [ "${dynload#"$stdlib"}" = "$dynload" ]; then
    mkdir -p "$root$dynload"
    cp -a "$dynload/." "$root$dynload/"
  fi
  for object in "$py" "$dynload"/*.so; do
    ldd "$object" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
      copy_with_parents "$lib" "$root"
    done
  done
  cp /etc/ld.so.cache "$root/etc/" 2>/dev/null || true
  echo "root:x:0:0:root:/root:/bin/false" >"$root/etc/passwd"
  if tar -C "$root" -cf - . | DOCKER_HOST="$HOST" docker import \
    --change 'CMD ["/usr/bin/python3"]' - "$IMAGE" >/dev/null; then
    log "image $IMAGE built"
    image_runs || log "the new image does not run Python; Docker tests will skip"
  else
    log "docker import failed; Docker tests will skip"
  fi
  rm -rf "$root"
}

main() {
  if [ "$(id -u)" != 0 ]; then
    log "not running as root: cannot install or start dockerd; Docker tests will skip"
    return 0
  fi
  install_engine || { log "could not install docker.io; Docker tests will skip"; return 0; }
  HOST=""
  find_or_start_engine || { log "no Docker engine; Docker tests will skip"; return 0; }
  build_image
}

main
exit 0
