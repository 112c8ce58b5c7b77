#!/usr/bin/env bash
# Runs clang-tidy (the repository's .clang-tidy) over the C++ sources a change touches: the .cc
# files under src/ and tests/ that differ between a base commit and HEAD, and the .cc beside each
# changed header (foo.h -> foo.cc). Findings in our headers are reported through the .cc files
# that include them. Every enabled check is an error: any finding fails the run (exit 1), and
# all of them are printed.
#
# Usage: scripts/clang-tidy-changed.sh BUILD_DIR [FILE...]
#   BUILD_DIR  a configured build with compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS=ON),
#              not a unity build (its database lists unity_*.cxx, not our files); clang as the
#              compiler, so the flags are clang's. The generated headers are made here.
#   FILE...    check these files instead of the change (e.g. `git ls-files 'src/*.cc'`).
# Base: $KVPOOL_TIDY_BASE when set, else HEAD^ (the first parent: a merge is checked for all it
# brings in). Without a parent (first commit, shallow clone) nothing is checked (exit 0).
# Jobs: $KVPOOL_TIDY_JOBS (default 2). About 15 s a file (the median; a few take minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
build=$1
shift
db="${build}/compile_commands.json"
if [ ! -f "${db}" ]; then
  echo "clang-tidy-changed: ${db} is missing: configure ${build} with" \
    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON" >&2
  exit 2
fi
if grep -q '/unity_[0-9]*_cxx\.cxx"' "${db}"; then
  echo "clang-tidy-changed: ${build} is a unity build (CMAKE_UNITY_BUILD): its compile database" \
    "names unity_*.cxx, not our files; configure a tree without it" >&2
  exit 2
fi
tidy=${CLANG_TIDY:-clang-tidy}
jobs=${KVPOOL_TIDY_JOBS:-2}

files=()
if [ $# -gt 0 ]; then
  files=("$@")
else
  if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "clang-tidy-changed: not a git checkout: no change to check, nothing checked"
    exit 0
  fi
  if [ -n "${KVPOOL_TIDY_BASE:-}" ]; then
    base=$(git rev-parse --verify -q "${KVPOOL_TIDY_BASE}^{commit}") || {
      echo "clang-tidy-changed: KVPOOL_TIDY_BASE=${KVPOOL_TIDY_BASE} is not a commit here" >&2
      exit 2
    }
  elif ! base=$(git rev-parse --verify -q 'HEAD^'); then
    echo "clang-tidy-changed: HEAD has no parent here (first commit or shallow clone):" \
      "nothing to compare with, nothing checked (set KVPOOL_TIDY_BASE to check a range)"
    exit 0
  fi
  mapfile -t changed < <(git diff --name-only --diff-filter=d "${base}" HEAD -- \
    'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'include/*.h')
  for f in "${changed[@]}"; do
    case "$f" in
      *.cc) files+=("$f") ;;
      *.h) [ -f "${f%.h}.cc" ] && files+=("${f%.h}.cc") ;;
    esac
  done
  echo "clang-tidy-changed: ${#changed[@]} C++ file(s) changed since $(git rev-parse --short "${base}")"
fi

# Keep the files the build knows (a fuzz target of another configuration, a deleted file: no).
mapfile -t known < <(python3 -c '
import json, os, sys
db = json.load(open(sys.argv[1]))
known = {os.path.realpath(os.path.join(e["directory"], e["file"])) for e in db}
for f in sorted(set(sys.argv[2:])):
    if os.path.realpath(f) in known:
        print(f)
    else:
        print(f"clang-tidy-changed: {f}: not in the compile database, not checked", file=sys.stderr)
' "${db}" "${files[@]}")
if [ ${#known[@]} -eq 0 ]; then
  echo "clang-tidy-changed: no C++ source to check"
  exit 0
fi

# Generated headers the sources include (rpc/kvpool.pb.h, master/status_page_html.h...).
if [ -f "${build}/build.ninja" ]; then
  mapfile -t gen < <(ninja -C "${build}" -t targets all |
    sed -n 's/^\([^/][^:]*\.h\): CUSTOM_COMMAND$/\1/p')
  # Their own commands only: through ninja, a header waits for the libraries its target's
  # sources depend on (order-only), which would compile them.
  for h in "${gen[@]}"; do
    (cd "${build}" && bash -ec "$(ninja -t commands -s "$h")") >/dev/null
  done
fi

logs=$(mktemp -d)
trap 'rm -rf "${logs}"' EXIT
echo "clang-tidy-changed: checking ${#known[@]} file(s), ${jobs} at a time ($(${tidy} --version |
  sed -n 's/.*LLVM version \([0-9.]*\).*/\1/p'))"
start=${SECONDS}
export tidy build logs
printf '%s\n' "${known[@]}" | xargs -P "${jobs}" -I{} bash -c '
  f={}; log="${logs}/$(echo "$f" | tr / _)"
  t0=$(date +%s%N)
  if "${tidy}" -p "${build}" --quiet "$f" >"${log}.out" 2>&1; then rc=0; else rc=$?; fi
  t=$((($(date +%s%N) - t0) / 100000000))
  printf "%s %d.%d s%s\n" "$f" $((t / 10)) $((t % 10)) "$([ $rc -eq 0 ] || echo "  FINDINGS (exit $rc)")"
  [ $rc -eq 0 ] || mv "${log}.out" "${log}.fail"
  true'
failed=("${logs}"/*.fail)
if [ -e "${failed[0]}" ]; then
  echo "=== clang-tidy findings ==="
  # "N warnings generated." counts what the filter dropped too: noise.
  grep -hv -E '^[0-9]+ (warning|error)s?( and [0-9]+ (warning|error)s?)? generated\.$' \
    "${failed[@]}" || true
  echo "clang-tidy-changed: findings in ${#failed[@]} of ${#known[@]} file(s)" \
    "($((SECONDS - start)) s); fix them or NOLINT(check) with the reason (docs/testing.md)" >&2
  exit 1
fi
echo "clang-tidy-changed: ${#known[@]} file(s) clean ($((SECONDS - start)) s)"
