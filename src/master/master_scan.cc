// MasterCore::ScanKeys: remove_by_regex and list_keys for one tenant, one bounded page per
// request. The work per request is one ListObjects page (at most `limit` keys, about
// kListScanBudget objects scanned, shard locks held for kListSlotsPerLock slots at a time), so a
// scan of millions of keys never holds up puts and gets for more than one short piece.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <regex>

#include "common/tenant_key.h"
#include "master/master_core.h"

namespace kvpool::master {
namespace {

// Longest pattern accepted: a regex is compiled per page, and std::regex's cost grows with it.
constexpr size_t kMaxScanPatternBytes = 4096;
// Keys examined per page when the request leaves limit at 0.
constexpr uint32_t kDefaultScanLimit = 1000;

}  // namespace

Result<rpc::ScanKeysReply> MasterCore::ScanKeys(const rpc::ScanKeys& req, TimePoint now,
                                                std::string_view tenant) {
  if (req.pattern().size() > kMaxScanPatternBytes) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("scan keys: pattern of {} bytes is longer than {}",
                              req.pattern().size(), kMaxScanPatternBytes));
  }
  std::optional<std::regex> re;
  if (!req.pattern().empty()) {
    try {
      re.emplace(req.pattern(), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("scan keys: pattern '{}' does not compile: {}",
                                req.pattern().substr(0, 200), e.what()));
    }
  }
  const size_t limit = req.limit() == 0 ? kDefaultScanLimit : req.limit();
  // The tenant's namespace is a key prefix; the default tenant's keys are those without one.
  const std::string prefix = MakeTenantKey(tenant, "");
  auto page = ListObjects(prefix, limit, req.cursor());
  if (!page.ok()) return page.status();

  rpc::ScanKeysReply reply;
  reply.set_next_cursor(page->next_cursor);
  const int64_t now_ns = ToNanos(now);
  for (const ObjectListing::Entry& e : page->objects) {
    if (TenantOf(e.key) != tenant) continue;  // default tenant: skip other tenants' keys
    const std::string_view user_key = UserKeyOf(e.key);
    if (re && !std::regex_search(user_key.begin(), user_key.end(), *re)) continue;
    if (!req.remove()) {
      if (!e.pending) reply.add_keys(user_key.data(), user_key.size());
      continue;
    }
    std::string msg;
    const ErrorCode code = RemoveOne(e.key, req.force(), now_ns, &msg);
    if (code == ErrorCode::OK) {
      reply.set_removed(reply.removed() + 1);
      reply.add_keys(user_key.data(), user_key.size());
    } else if (code != ErrorCode::OBJECT_NOT_FOUND) {  // gone meanwhile: nothing to count
      reply.set_skipped(reply.skipped() + 1);
    }
  }
  if (req.remove() && reply.removed() > 0) {
    spdlog::debug("scan keys tenant={} removed={} skipped={}", tenant.empty() ? "default" : tenant,
                  reply.removed(), reply.skipped());
  }
  return reply;
}

}  // namespace kvpool::master
