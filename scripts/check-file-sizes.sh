#!/usr/bin/env bash
# Keeps kvpool's rooms small (docs/architecture.md, "Rooms"): fails, naming each, when a source
# file (C++ under src/ include/ tests/, Python under python/ scripts/, shell under scripts/) has
# more than MAX_LINES lines (600) and is not listed in scripts/long-files.txt with a reason.
# A listed file that has shrunk below the limit fails too, so the list stays honest.
# Usage: scripts/check-file-sizes.sh SOURCE_DIR     (CTest: file_size_check, label unit)
set -uo pipefail

src=${1:?usage: check-file-sizes.sh SOURCE_DIR}
max_lines=600
exceptions="${src}/scripts/long-files.txt"
failures=0

declare -A listed=()
while IFS= read -r line; do
  line=${line%%#*}
  read -r path _ <<<"${line}"
  [ -n "${path:-}" ] && listed["${path}"]=1
done <"${exceptions}"

while IFS= read -r -d '' file; do
  rel=${file#"${src}"/}
  lines=$(wc -l <"${file}")
  if [ "${lines}" -gt "${max_lines}" ] && [ -z "${listed[${rel}]:-}" ]; then
    echo "file size: ${rel} has ${lines} lines (> ${max_lines}): split it along its seams, or" \
      "list it in scripts/long-files.txt with the reason" >&2
    failures=$((failures + 1))
  fi
done < <(find "${src}/src" "${src}/include" "${src}/tests" "${src}/python" "${src}/scripts" \
  -type f \( -name '*.cc' -o -name '*.h' -o -name '*.py' -o -name '*.sh' \) -print0)

for rel in "${!listed[@]}"; do
  if [ ! -f "${src}/${rel}" ]; then
    echo "file size: scripts/long-files.txt lists ${rel}, which does not exist" >&2
    failures=$((failures + 1))
  elif [ "$(wc -l <"${src}/${rel}")" -le "${max_lines}" ]; then
    echo "file size: ${rel} is ${max_lines} lines or fewer now: remove it from" \
      "scripts/long-files.txt" >&2
    failures=$((failures + 1))
  fi
done

[ "${failures}" -eq 0 ] && echo "file sizes: every file is within ${max_lines} lines or listed"
exit $((failures > 0))
