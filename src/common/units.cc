#include "common/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace kvpool {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Multiplier for a unit suffix, 0 when the unit is unknown.
uint64_t UnitMultiplier(const std::string& unit) {
  if (unit.empty() || unit == "b") return 1;
  if (unit == "k" || unit == "kb" || unit == "kib") return 1ULL << 10;
  if (unit == "m" || unit == "mb" || unit == "mib") return 1ULL << 20;
  if (unit == "g" || unit == "gb" || unit == "gib") return 1ULL << 30;
  if (unit == "t" || unit == "tb" || unit == "tib") return 1ULL << 40;
  return 0;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{} '{}' is not a valid size: {} (examples: 4GB, 512MB, 1048576)",
                              what, text, why));
  };
  std::string_view s = Trim(text);
  if (s.empty()) return bad("empty");
  if (s.front() == '-') return bad("negative");
  if (s.find('%') != std::string_view::npos) return bad("percentages are not sizes");
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string number(s.substr(0, i));
  if (number.empty() || number == ".") return bad("no number");
  uint64_t mult = UnitMultiplier(Lower(Trim(s.substr(i))));
  if (mult == 0) return bad("unknown unit (use B, KB, MB, GB or TB)");
  if (number.find('.') == std::string::npos) {
    errno = 0;
    char* end = nullptr;
    unsigned long long n = std::strtoull(number.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return bad("number out of range");
    if (n > (1ULL << 63) / mult) return bad("too large");
    return static_cast<uint64_t>(n) * mult;
  }
  char* end = nullptr;
  double d = std::strtod(number.c_str(), &end);
  if (*end != '\0') return bad("malformed number");
  double bytes = d * static_cast<double>(mult);
  if (bytes >= 9.2e18) return bad("too large");
  if (bytes != std::floor(bytes)) return bad("not a whole number of bytes");
  return static_cast<uint64_t>(bytes);
}

std::string FormatSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.2f} {}", v, kUnits[u]);
}

}  // namespace kvpool
