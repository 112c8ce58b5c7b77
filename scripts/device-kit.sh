#!/usr/bin/env bash
# Packs what the device machine needs to run scripts/device-figures.sh: the kvpool-bench binary
# (it carries every role: master, node, engines; /proc/self/exe), stripped, and the shared
# libraries it loads that are not glibc's (that machine runs another distribution, no package
# installs). The kit is ignored by git; the device tool carries it (docs/benchmarks.md,
# "Figures from a machine with more cores").
# Usage: scripts/device-kit.sh [BUILD_DIR (build)] [KIT_DIR (device-kit)]
# (relative paths: from where it is called; the defaults are in the repository's root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-${root}/build}")
kit=$(realpath -m "${2:-${root}/device-kit}")
bin="${build}/src/tools/kvpool-bench"
[[ -x "${bin}" ]] || { echo "no ${bin}: build it first (ninja -C ${build} kvpool-bench)" >&2; exit 1; }
rm -rf "${kit}"
mkdir -p "${kit}/bin" "${kit}/lib"
strip -o "${kit}/bin/kvpool-bench" "${bin}"
# glibc's own libraries stay: the other machine's (newer) glibc runs what this one built.
ldd "${bin}" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
  case "${name}" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.*) ;;
    *) cp -L "${path}" "${kit}/lib/${name}" ;;
  esac
done
du -sh "${kit}"
