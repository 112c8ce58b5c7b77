// `kvpool top`'s reader of /metrics: ParsePromText, SnapshotOf and RenderTop on arbitrary text
// (a master, or anything else listening on the port, may answer anything). Two snapshots are
// taken from the two halves of the input so rates and quantiles see arbitrary deltas.
#include <cstdlib>

#include "tools/prom_text.h"
#include "tools/top_view.h"

using namespace kvpool::tools;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view a = text.substr(0, size / 2), b = text.substr(size / 2);
  size_t skipped = 0;
  auto samples = ParsePromText(a, &skipped);
  TopSnapshot first = SnapshotOf(samples);
  TopSnapshot second = SnapshotOf(ParsePromText(b));
  std::string screen = RenderTop("fuzz", second, &first, 1.5);
  if (screen.empty()) std::abort();
  RenderTop("fuzz", first, nullptr, 0);
  return 0;
}
