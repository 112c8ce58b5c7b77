#!/usr/bin/env bash
# Installs every Debian package kvpool needs to build, test and benchmark.
# libcpp-httplib-dev: the master's HTTP admin/metrics server and `kvpool top`.
# The one place dependencies are listed; README's commands call it.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config
  libasio-dev protobuf-compiler libprotobuf-dev
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev  # the master's HTTP admin server and `kvpool top` (top-level CMakeLists)
  cppzmq-dev libmsgpack-cxx-dev  # the master's KV events (ZMQ PUB + msgpack; docs/operations.md)
  libhiredis-dev redis-server  # `kvpool bench --peers redis`: the Redis comparison
  etcd-server etcd-client  # master high availability: the masters' election (tests start a real etcd)
  libssl-dev openssl  # authentication (HMAC) and TLS; the openssl command makes test certificates
  liburing-dev  # the disk tier's I/O (src/disk: io_uring)
  fio  # the disk tier's benchmark baseline (docs/benchmarks.md, "Disk tier")
  iproute2  # scripts/fleet.py: hosts in network namespaces (ip netns, veth, bridge, tc tbf)
  clang libclang-rt-14-dev  # the sanitizer test build and the fuzzers (libFuzzer's runtime)
  clang-tidy  # scripts/clang-tidy-changed.sh: the changed files against .clang-tidy
  # The Python module (/usr/bin/python3) and its tests.
  python3-dev pybind11-dev python3-pybind11 python3-pytest python3-numpy
  python3-zmq python3-msgpack  # kvpool.kv_events, the Python KV-events subscriber
  chromium chromium-driver python3-selenium  # the status page's test in a real browser (headless)
)
# Installed when the distribution has them: the Python tests use torch tensors when present and
# numpy arrays otherwise (Debian 12 ships python3-torch; other releases may not).
OPTIONAL_PKGS=(python3-torch)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done
optional=()
for p in "${OPTIONAL_PKGS[@]}"; do installed "$p" || optional+=("$p"); done
if [ ${#missing[@]} -gt 0 ] || [ ${#optional[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  for p in "${optional[@]}"; do
    # Read the whole answer before matching: `apt-cache policy | grep -q` under pipefail fails
    # whenever grep stops reading early (apt-cache then dies of SIGPIPE).
    policy=$(apt-cache policy "$p" 2>/dev/null || true)
    if grep -q "Candidate: [^(]" <<<"$policy"; then
      missing+=("$p")
    else
      echo "install-deps: $p is not available here; skipping it (optional)"
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"
  fi
fi
