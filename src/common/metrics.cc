#include "common/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kvpool::metrics {
namespace {

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

uint64_t LatencyHistogram::Snapshot::count() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

void LatencyHistogram::ObserveNanos(uint64_t ns) {
  // First bound >= ns (Prometheus buckets are "less than or equal").
  size_t i =
      static_cast<size_t>(std::lower_bound(kLatencyBoundsNs.begin(), kLatencyBoundsNs.end(), ns) -
                          kLatencyBoundsNs.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::Take() const {
  Snapshot s;
  for (size_t i = 0; i < kBuckets; ++i) s.counts[i] = counts_[i].load(std::memory_order_relaxed);
  s.sum_ns = sum_ns_.load(std::memory_order_relaxed);
  return s;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void TextWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void TextWriter::Series(std::string_view name, std::string_view suffix, Labels labels,
                        Label extra) {
  out_.append(name);
  out_.append(suffix);
  bool any = false;
  auto add = [&](const Label& l) {
    out_ += any ? ',' : '{';
    any = true;
    fmt::format_to(std::back_inserter(out_), "{}=\"{}\"", l.first, EscapeLabelValue(l.second));
  };
  for (const Label& l : labels) add(l);
  if (!extra.first.empty()) add(extra);
  if (any) out_ += '}';
  out_ += ' ';
}

void TextWriter::Sample(std::string_view name, Labels labels, uint64_t value) {
  Series(name, "", labels, {});
  fmt::format_to(std::back_inserter(out_), "{}\n", value);
}

void TextWriter::Sample(std::string_view name, Labels labels, double value) {
  Series(name, "", labels, {});
  out_ += FormatDouble(value);
  out_ += '\n';
}

void TextWriter::Histogram(std::string_view name, Labels labels,
                           const LatencyHistogram::Snapshot& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    cumulative += h.counts[i];
    std::string le = i < kLatencyBoundsNs.size()
                         ? FormatDouble(static_cast<double>(kLatencyBoundsNs[i]) / 1e9)
                         : std::string("+Inf");
    Series(name, "_bucket", labels, {"le", le});
    fmt::format_to(std::back_inserter(out_), "{}\n", cumulative);
  }
  Series(name, "_sum", labels, {});
  out_ += FormatDouble(static_cast<double>(h.sum_ns) / 1e9);
  out_ += '\n';
  Series(name, "_count", labels, {});
  fmt::format_to(std::back_inserter(out_), "{}\n", cumulative);
}

void TextWriter::WriteCounter(std::string_view name, std::string_view help, uint64_t value) {
  Family(name, "counter", help);
  Sample(name, {}, value);
}

void TextWriter::WriteGauge(std::string_view name, std::string_view help, double value) {
  Family(name, "gauge", help);
  Sample(name, {}, value);
}

void ErrorCounts::Add(int32_t code) {
  for (Slot& slot : slots_) {
    int32_t seen = slot.code.load(std::memory_order_relaxed);
    if (seen == 0 && slot.code.compare_exchange_strong(seen, code, std::memory_order_relaxed)) {
      seen = code;
    }
    if (seen == code) {
      slot.count.Add();
      return;
    }
  }
  slots_.back().count.Add();
}

uint64_t ErrorCounts::Count(int32_t code) const {
  for (const Slot& slot : slots_) {
    if (slot.code.load(std::memory_order_relaxed) == code) return slot.count.value();
  }
  return 0;
}

}  // namespace kvpool::metrics
