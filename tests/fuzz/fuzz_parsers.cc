// The parsers of operator-typed values: ParseSize ("4GB", "1.5 MiB"), ParseEndpoint
// ("host:port", "[::1]:50051"), ParseMasterAddress ("etcd://h1:2379;h2:2379/cluster"),
// ValidateKey and UnpackKeys (EXISTS requests' packed keys). The
// first byte picks the parser, the rest is the text. Checked beyond "no crash": a parsed size
// prints and parses back to itself when it is a whole number of the unit FormatSize picks, a parsed
// endpoint round-trips, and unpacked keys pack back to the same bytes.
#include <cstdlib>
#include <string>
#include <vector>

#include "common/keys.h"
#include "common/units.h"
#include "fuzz_input.h"
#include "ha/etcd_address.h"
#include "rpc/endpoint.h"

using namespace kvpool;

namespace {

void Size(std::string_view text) {
  auto v = ParseSize(text, "--fuzz");
  if (!v.ok()) {
    if (v.code() != ErrorCode::INVALID_PARAMS || v.status().message().empty()) std::abort();
    return;
  }
  // A plain decimal rendering must parse back to the same number.
  auto again = ParseSize(std::to_string(*v), "--fuzz");
  if (!again.ok() || *again != *v) std::abort();
  (void)FormatSize(*v);
}

void Endpoint(std::string_view text, uint16_t default_port) {
  auto ep = rpc::ParseEndpoint(text, default_port, "--fuzz");
  if (!ep.ok()) {
    if (ep.code() != ErrorCode::INVALID_PARAMS || ep.status().message().empty()) std::abort();
    return;
  }
  if (ep->port == 0 || ep->host.empty()) std::abort();
  // Round trip, for hosts without brackets (those are ambiguous in any host:port syntax).
  if (ep->host.find_first_of("[]") != std::string::npos) return;
  std::string printed = ep->host.find(':') != std::string::npos
                            ? "[" + ep->host + "]:" + std::to_string(ep->port)
                            : ep->ToString();
  auto again = rpc::ParseEndpoint(printed, 0, "--fuzz");
  if (!again.ok() || again->host != ep->host || again->port != ep->port) std::abort();
}

// A master address: an error is INVALID_PARAMS with a message; an etcd:// one has members with
// ports and a valid cluster id, and prints back to an address that parses to the same.
void MasterAddress(std::string_view text) {
  auto a = ha::ParseMasterAddress(text, 50051, "--fuzz");
  if (!a.ok()) {
    if (a.code() != ErrorCode::INVALID_PARAMS || a.status().message().empty()) std::abort();
    return;
  }
  if (!a->via_etcd) return;
  if (a->etcd.endpoints.empty() || !ha::ValidateClusterId(a->etcd.cluster_id, "id").ok()) {
    std::abort();
  }
  for (const rpc::Endpoint& ep : a->etcd.endpoints) {
    if (ep.port == 0 || ep.host.empty()) std::abort();
  }
  auto again = ha::ParseMasterAddress(a->ToString(), 50051, "--fuzz");
  if (!again.ok() || again->ToString() != a->ToString()) std::abort();
}

void Key(std::string_view key) {
  Status st = ValidateKey(key);
  bool want_ok = !key.empty() && key.size() <= kMaxKeyBytes;
  if (st.ok() != want_ok) std::abort();
  if (!st.ok() && st.code() != ErrorCode::INVALID_KEY) std::abort();
}

void Packed(std::string_view packed) {
  auto keys = UnpackKeys(packed);
  if (!keys.ok()) {
    if (keys.code() != ErrorCode::INVALID_PARAMS) std::abort();
    return;
  }
  const std::vector<std::string> copies(keys->begin(), keys->end());
  // Non-minimal varints (0x80 0x00 for 0) unpack too; a re-pack is never longer.
  const std::string repacked = PackKeys(copies);  // the views below point into it
  if (repacked.size() > packed.size()) std::abort();
  auto again = UnpackKeys(repacked);
  if (!again.ok() || again->size() != keys->size()) std::abort();
  for (size_t i = 0; i < keys->size(); ++i) {
    if ((*again)[i] != (*keys)[i]) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  switch (in.U8() % 5) {
    case 0:
      Size(in.Rest());
      break;
    case 1: {
      uint16_t default_port = in.U8() < 128 ? 0 : 50051;
      Endpoint(in.Rest(), default_port);
      break;
    }
    case 2:
      Key(in.Rest());
      break;
    case 4:
      MasterAddress(in.Rest());
      break;
    default:
      Packed(in.Rest());
  }
  return 0;
}
