// The HTTP request path of the admin servers (common/http_server.h), free of any socket: the
// server calls these on the bytes it read, and tests/fuzz/fuzz_http_request.cc fuzzes them.
//
// kvpool keeps its own small parser instead of a library: the admin port answers GETs of a
// path and a few parameters and one POST form, so a request is one bounded head (no chunked
// bodies, no keep-alive, no upgrades); the whole path is ~130 lines that a fuzzer covers
// (docs/security.md, "The HTTP admin port").
//
// Threading: every function is pure and thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool {

using HttpParams = std::multimap<std::string, std::string>;

// An admin request is a path and a few parameters: head and body are capped.
inline constexpr size_t kMaxHttpHeadBytes = 16 * 1024;
inline constexpr size_t kMaxHttpBodyBytes = 16 * 1024;

// One parsed request head.
struct HttpRequest {
  std::string method;
  std::string path;  // URL-decoded
  HttpParams params;
  size_t content_length = 0;  // at most kMaxHttpBodyBytes + a digit
  std::string authorization;
  bool form = false;  // application/x-www-form-urlencoded body
};

// Parses `head` (request line and headers, without the final blank line) into `*req`.
// INVALID_PARAMS (the server answers 400) naming what is wrong: a malformed request line or
// header line, a bad percent-escape in the URL, a Content-Length that is not digits or is over
// the cap, any Transfer-Encoding (chunked bodies are not accepted).
Status ParseHttpHead(std::string_view head, HttpRequest* out);
// Adds the parameters of a form body (when req->form) to req->params. INVALID_PARAMS for a bad
// percent-escape.
Status ParseHttpForm(std::string_view body, HttpRequest* req);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`, as in a query). Malformed
// escapes are kept as they are.
std::string UrlDecode(std::string_view s, bool plus_is_space);
// True when every '%' in `s` starts an escape of two hex digits (what UrlDecode decodes; the
// server answers 400 to a request whose URL or form body has another).
bool ValidUrlEscapes(std::string_view s);
// Splits "a=1&b=%41" into URL-decoded pairs, appended to `out`.
void ParseUrlParams(std::string_view query, HttpParams& out);

}  // namespace kvpool
