// MasterCore::ScanKeys: the key listing behind remove_by_regex and list_keys, for one tenant,
// one bounded page per request. The work per request is one ListObjects page (at most `limit`
// keys, about kListScanBudget objects scanned, shard locks held for kListSlotsPerLock slots at
// a time), so a scan of millions of keys never holds up puts and gets for more than one short
// piece. Only a literal prefix is matched here: regular expressions run in the client, where a
// pathological pattern costs its caller's time and not the master's.
#include <fmt/format.h>

#include "common/keys.h"
#include "common/tenant_key.h"
#include "master/master_core.h"

namespace kvpool::master {
namespace {

// Keys examined per page when the request leaves limit at 0.
constexpr uint32_t kDefaultScanLimit = 1000;

}  // namespace

Result<rpc::ScanKeysReply> MasterCore::ScanKeys(const rpc::ScanKeys& req, std::string_view tenant) {
  if (req.prefix().size() > kMaxKeyBytes) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("scan keys: prefix of {} bytes is longer than a key ({})",
                              req.prefix().size(), kMaxKeyBytes));
  }
  const size_t limit = req.limit() == 0 ? kDefaultScanLimit : req.limit();
  // The tenant's namespace is a key prefix; the default tenant's keys are those without one.
  auto page = ListObjects(MakeTenantKey(tenant, req.prefix()), limit, req.cursor());
  if (!page.ok()) return page.status();
  rpc::ScanKeysReply reply;
  reply.set_next_cursor(page->next_cursor);
  for (const ObjectListing::Entry& e : page->objects) {
    if (e.pending || TenantOf(e.key) != tenant) continue;  // default tenant: others' keys
    const std::string_view user_key = UserKeyOf(e.key);
    reply.add_keys(user_key.data(), user_key.size());
  }
  return reply;
}

}  // namespace kvpool::master
