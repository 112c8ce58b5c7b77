#include "python/ssd_offload.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace kvpool::python {

Status ApplySsdOffload(const SsdOffload& ssd, const char* env_path, uint64_t segment_bytes,
                       ClientOptions* options) {
  if (!ssd.enabled) return Status::Ok();
  std::string path = ssd.path;
  if (path.empty() && env_path != nullptr) path = env_path;
  if (path.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "enable_ssd_offload needs a directory for the disk tier: give ssd_offload_path "
                  "or set MOONCAKE_OFFLOAD_FILE_STORAGE_PATH");
  }
  if (segment_bytes == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("enable_ssd_offload (path {}): the disk tier sits below the segment "
                              "this client contributes, and global_segment_size is 0; give it a "
                              "segment, or give the kvpool node --disk_path (standalone engines)",
                              path));
  }
  if (ssd.size && *ssd.size == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("ssd_offload_size is 0 (path {}): give a size such as \"16gb\", or "
                              "leave it out for {} x global_segment_size",
                              path, kDefaultSegmentMultiple));
  }
  if (!ssd.size && segment_bytes > UINT64_MAX / kDefaultSegmentMultiple) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("global_segment_size {} is too large for the default "
                              "ssd_offload_size ({} x it): give ssd_offload_size",
                              segment_bytes, kDefaultSegmentMultiple));
  }
  options->disk_path = std::move(path);
  options->disk_size = ssd.size.value_or(kDefaultSegmentMultiple * segment_bytes);
  return Status::Ok();
}

Status NameSsdSettings(const Status& st) {
  if (st.ok()) return st;
  std::string m = st.message();
  for (const auto& [flag, setting] :
       {std::pair<std::string_view, std::string_view>{"--disk_path", "ssd_offload_path"},
        {"--disk_size", "ssd_offload_size"}}) {
    for (size_t at = m.find(flag); at != std::string::npos; at = m.find(flag, at)) {
      m.replace(at, flag.size(), setting);
      at += setting.size();
    }
  }
  return Status(st.code(), std::move(m));
}

}  // namespace kvpool::python
