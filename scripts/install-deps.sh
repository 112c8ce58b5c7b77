#!/usr/bin/env bash
# Installs every Debian package kvpool needs to build, test and benchmark.
# The one place dependencies are listed; README's commands call it.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config
  libasio-dev protobuf-compiler libprotobuf-dev
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
