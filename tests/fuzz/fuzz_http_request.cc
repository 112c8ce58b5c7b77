// The admin port's request path (common/http_request.h) on arbitrary bytes, as the server runs
// it on what a client sent: the head up to the first blank line (at most kMaxHttpHeadBytes, as
// the server reads it), ParseHttpHead, then the body (capped at Content-Length) through
// ParseHttpForm. Whatever the input, parsing ends with a request or an INVALID_PARAMS that
// names the problem, and a parsed request keeps the caps the server relies on.
#include <cstdlib>
#include <string_view>

#include "common/http_request.h"

using namespace kvpool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos || end + 4 > kMaxHttpHeadBytes) return 0;  // 431 / 414
  HttpRequest req;
  Status st = ParseHttpHead(bytes.substr(0, end + 2), &req);
  if (!st.ok()) {
    if (st.code() != ErrorCode::INVALID_PARAMS || st.message().empty()) std::abort();
    return 0;
  }
  // The cap is checked before each digit: one digit more at most.
  if (req.content_length > kMaxHttpBodyBytes * 10 + 9) std::abort();
  if (req.content_length > kMaxHttpBodyBytes) return 0;  // 413
  std::string_view body = bytes.substr(end + 4, req.content_length);
  st = ParseHttpForm(body, &req);
  if (!st.ok() && st.code() != ErrorCode::INVALID_PARAMS) std::abort();
  // What the handlers get: decoding never grows a string.
  if (req.path.size() > end) std::abort();
  return 0;
}
