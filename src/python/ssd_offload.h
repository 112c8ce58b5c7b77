// Mooncake's and SGLang's SSD-offload settings (`enable_ssd_offload`, `ssd_offload_path`,
// $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH) mapped onto kvpool's disk tier below the segment an
// embedded client contributes (ClientOptions::disk_path / disk_size, docs/operations.md,
// "Disk tier").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvpool/client.h"
#include "kvpool/status.h"

namespace kvpool::python {

struct SsdOffload {
  bool enabled = false;
  // The directory of the disk tier's files; empty: $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH.
  std::string path;
  // kvpool's `ssd_offload_size`; unset: kDefaultSegmentMultiple x the contributed segment.
  std::optional<uint64_t> size;
};

// The default disk tier is this many times the DRAM segment above it: a fixed rule, so a
// restarted client asks for the same size and re-adopts its file (a size derived from free
// space would change with the file's own preallocation).
inline constexpr uint64_t kDefaultSegmentMultiple = 4;

// Sets options->disk_path / disk_size from `ssd` for a client contributing `segment_bytes`.
// Disabled: leaves them alone (a path given without enable_ssd_offload is ignored, as in
// Mooncake). `env_path` is $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH as the caller read it (null:
// unset). Errors: INVALID_PARAMS when no directory is given, or no segment is contributed (the
// disk tier sits below one; standalone engines get theirs from the node's --disk_path). Whether
// the directory exists, is writable and has the space is checked by Client::Setup, which names
// the path.
Status ApplySsdOffload(const SsdOffload& ssd, const char* env_path, uint64_t segment_bytes,
                       ClientOptions* options);

// `st` (a failed Client::Setup with SSD offload on) with the node's flag names its disk-tier
// messages give (--disk_path, --disk_size) replaced by the Python settings the user gave
// (ssd_offload_path, ssd_offload_size).
Status NameSsdSettings(const Status& st);

}  // namespace kvpool::python
