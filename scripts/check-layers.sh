#!/usr/bin/env bash
# Keeps kvpool's layers pointing one way (docs/architecture.md, "Layers"). Fails, naming every
# offence, when
#   - a file under src/client includes "node/" (the client library sits below the node);
#   - a file under src/hosting includes "client/", "node/" or "master/" (the segment host sits
#     below the client and the node, and talks to the master only through master_client/);
#   - a file under src/master_client includes "master/", "hosting/", "client/" or "node/";
#   - a file under src/node includes a client/ header other than the node's own interface to the
#     client library (client/embedded/hosted_client.h) and the shared wire conversions named below;
#   - a library links one at its own layer or above it (table `layer` below; a new kvpool_
#     library must be added to the table);
#   - a file under src/ outside src/tools calls getenv other than src/common/env.cc;
#   - docs/architecture.dot (the picture of the layers) puts a folder in another layer.
# Usage: scripts/check-layers.sh SOURCE_DIR LINKS_FILE
#   LINKS_FILE: one line per library, "target: direct link dependencies...", as CMake sees
#   them; the build writes it to <build>/layer_links.txt at configure time (CMakeLists.txt).
# Run by CTest as `layering_check` (label unit).
set -uo pipefail

src=${1:?usage: check-layers.sh SOURCE_DIR LINKS_FILE}
links=${2:?usage: check-layers.sh SOURCE_DIR LINKS_FILE}
failures=0
fail() {
  echo "layering: $*" >&2
  failures=$((failures + 1))
}

# ---- Includes ----
# forbid_includes DIR PATTERN WHY: no file under src/DIR has an #include matching PATTERN.
forbid_includes() {
  local dir=$1 pattern=$2 why=$3 hit
  if [ ! -d "${src}/src/${dir}" ]; then
    fail "src/${dir} is missing (moved? update this script)"
    return
  fi
  while IFS= read -r hit; do
    [ -n "${hit}" ] && fail "${hit#"${src}"/}: ${why}"
  done < <(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"(${pattern})" \
             "${src}/src/${dir}" --include='*.h' --include='*.cc' || true)
}
forbid_includes client 'node/' "the client library must not include the node"
forbid_includes hosting 'client/|node/|master/' \
  "the segment host sits below the client and the node; it reaches the master via master_client/"
forbid_includes master_client 'master/|hosting/|client/|node/' \
  "the master's client stub depends on rpc, ha and common only"
# The node sees the client library through hosted_client.h only, plus the conversions it shares
# with it (PoolStat and ReplicateConfig on the wire, the security flags of a ClientOptions) and,
# in a test, the host allocator's registry the node's mapped regions must be found in.
node_allowed='client/(embedded/hosted_client|shared/pool_stat_proto|shared/replicate_config_proto|client_security)\.h'
while IFS= read -r hit; do
  [ -z "${hit}" ] && continue
  file=${hit%%:*}
  [[ "${hit}" =~ include[[:space:]]*\"([^\"]+)\" ]] && inc=${BASH_REMATCH[1]} || inc=
  if [[ "${inc}" =~ ^${node_allowed}$ ]]; then continue; fi
  if [[ "${file}" == *_test.cc && "${inc}" == client/standalone/host_memory_registry.h ]]; then continue; fi
  fail "${hit#"${src}"/}: src/node uses the client library through client/embedded/hosted_client.h only"
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"client/' "${src}/src/node" \
           --include='*.h' --include='*.cc' || true)

# Every folder by layer, as its library's below. A file that is not a test includes headers of
# its own folder, of include/kvpool/ and of lower layers only (tests may reach up for a helper,
# e.g. a raw-socket peer; the rules above hold for them too).
declare -A folder_layer=(
  [common]=0 [alloc]=0 [rpc]=1 [disk]=1 [ha]=2 [transfer]=2 [master_client]=3 [hosting]=4
  [client]=5 [master]=5 [node]=6 [tools]=7 [python]=7
)
for dir in "${src}"/src/*/; do
  folder=$(basename "${dir}")
  if [ -z "${folder_layer[${folder}]+x}" ]; then
    fail "src/${folder}: a folder missing from folder_layer in scripts/check-layers.sh"
    continue
  fi
  while IFS= read -r hit; do
    [ -z "${hit}" ] && continue
    file=${hit%%:*}
    [[ "${file}" == *_test.cc || "${file}" == *_test_util.h ]] && continue
    [[ "${hit}" =~ include[[:space:]]*\"([a-z_]+)/ ]] && inc=${BASH_REMATCH[1]} || inc=
    [ -z "${inc}" ] || [ "${inc}" = "${folder}" ] || [ "${inc}" = kvpool ] && continue
    [ ! -d "${src}/src/${inc}" ] && continue  # not one of ours (e.g. "pool.h" in tests)
    if [ -z "${folder_layer[${inc}]+x}" ]; then
      continue  # reported above as a folder missing from the table
    elif [ "${folder_layer[${inc}]}" -ge "${folder_layer[${folder}]}" ]; then
      fail "${hit#"${src}"/}: src/${folder} (layer ${folder_layer[${folder}]}) includes" \
        "${inc}/ (layer ${folder_layer[${inc}]}): a folder includes only lower layers"
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "${dir}" \
             --include='*.h' --include='*.cc' || true)
done

# ---- The picture ----
# docs/architecture.dot draws each folder in a cluster "cluster_layer_N": the same layers as
# folder_layer above, so the picture at the top of docs/architecture.md cannot drift.
dot_file="${src}/docs/architecture.dot"
declare -A drawn=()
if [ ! -f "${dot_file}" ]; then
  fail "docs/architecture.dot is missing"
else
  layer_now=
  while IFS= read -r line; do
    if [[ "${line}" =~ subgraph[[:space:]]+cluster_layer_([0-9]+) ]]; then
      layer_now=${BASH_REMATCH[1]}
    elif [[ -n "${layer_now}" && "${line}" =~ ^[[:space:]]*\"?([a-z_]+)\"?[[:space:]]*\[label= ]]; then
      drawn[${BASH_REMATCH[1]}]=${layer_now}
    elif [[ "${line}" =~ ^[[:space:]]*\}[[:space:]]*$ ]]; then
      layer_now=
    fi
  done <"${dot_file}"
  for f in "${!folder_layer[@]}"; do
    if [ -z "${drawn[${f}]+x}" ]; then
      fail "docs/architecture.dot: folder src/${f} is not drawn (a cluster_layer_N holds it)"
    elif [ "${drawn[${f}]}" != "${folder_layer[${f}]}" ]; then
      fail "docs/architecture.dot draws src/${f} in layer ${drawn[${f}]}; folder_layer says" \
        "${folder_layer[${f}]}"
    fi
  done
  for f in "${!drawn[@]}"; do
    [ -z "${folder_layer[${f}]+x}" ] && fail "docs/architecture.dot draws ${f}: no such folder"
  done
fi

# ---- Links ----
# Layer of each library: a library may link only libraries of a strictly lower layer, so
# siblings (the client library and the master service) never link each other.
declare -A layer=(
  [kvpool_common]=0 [kvpool_alloc]=0 [kvpool_proto]=0 [kvpool_test_certs]=0
  [kvpool_child_process]=1 [kvpool_rpc]=1 [kvpool_disk]=1 [kvpool_top_view]=1
  [kvpool_ha]=2 [kvpool_transfer]=2 [kvpool_test_support]=2
  [kvpool_master_client]=3
  [kvpool_segment_host]=4
  [kvpool_client]=5 [kvpool_master]=5
  [kvpool_node]=6
  [kvpool_app]=7 [kvpool_bench_tool]=7 [kvpool_python]=7 [kvpool_python_asan]=7
)
# Pairs never linked although the layers would allow it: the node reaches the master through the
# client library and the segment host, never by linking the master service.
declare -A never=([kvpool_node]="kvpool_master")
if [ ! -s "${links}" ]; then
  fail "${links}: no link graph (configure the build with tests on)"
else
  seen=0
  while IFS= read -r line; do
    target=${line%%:*}
    [ -z "${target}" ] && continue
    seen=$((seen + 1))
    if [ -z "${layer[${target}]+x}" ]; then
      fail "${target}: a library missing from the layer table in scripts/check-layers.sh"
      continue
    fi
    for dep in ${line#*:}; do
      dep=${dep#\$<LINK_ONLY:}
      dep=${dep%>}
      [[ "${dep}" == kvpool_* ]] || continue  # third-party and system libraries
      if [ -z "${layer[${dep}]+x}" ]; then
        fail "${target} links ${dep}, a library missing from the layer table"
      elif [ "${layer[${dep}]}" -ge "${layer[${target}]}" ]; then
        fail "${target} (layer ${layer[${target}]}) links ${dep} (layer ${layer[${dep}]}):" \
          "a library may link only lower layers"
      elif [[ " ${never[${target}]:-} " == *" ${dep} "* ]]; then
        fail "${target} links ${dep}: never (see the table \`never\` in scripts/check-layers.sh)"
      fi
    done
  done <"${links}"
  [ "${seen}" -ge 10 ] || fail "${links}: only ${seen} libraries listed (expected all kvpool_ ones)"
fi

# ---- The environment ----
# Library code reads the environment through common/env.h only (the client's variables are
# listed in client/client_config.cc); tools under src/tools may read PATH.
while IFS= read -r hit; do
  [ -z "${hit}" ] && continue
  file=${hit%%:*}
  file=${file#"${src}"/}
  [ "${file}" = src/common/env.cc ] && continue
  [[ "${file}" == src/tools/* ]] && continue
  fail "${hit#"${src}"/}: read the environment through kvpool::GetEnv (common/env.h)"
done < <(grep -rnE '\b(secure_)?getenv[[:space:]]*\(' "${src}/src" --include='*.h' --include='*.cc' || true)

if [ "${failures}" -ne 0 ]; then
  echo "layering: ${failures} offence(s); the rule and why: docs/architecture.md, \"Layers\"" >&2
  exit 1
fi
echo "layering: OK (includes under src/ by folder layer, the node's client headers, link graph, getenv)"
