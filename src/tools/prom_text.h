// A reader of the Prometheus text exposition format (what /metrics serves), enough for
// `kvpool top`: samples with their labels; comments and timestamps are skipped.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kvpool::tools {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;  // values unescaped
  double value = 0;

  // The label's value, or "" when absent.
  const std::string& label(const std::string& name) const;
};

// Parses every sample line of `text`. Lines that are not valid samples are skipped and counted
// in *skipped (when given); never throws, never reads past `text`.
std::vector<PromSample> ParsePromText(std::string_view text, size_t* skipped = nullptr);

}  // namespace kvpool::tools
