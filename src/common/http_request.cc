#include "common/http_request.h"

#include <algorithm>
#include <cctype>

namespace kvpool {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

Status ParseHttpHead(std::string_view head, HttpRequest* out) {
  HttpRequest& req = *out;
  auto bad = [](std::string_view why) {
    return Status(ErrorCode::INVALID_PARAMS, std::string(why));
  };
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) {
    return bad("malformed request line");
  }
  req.method = std::string(line.substr(0, sp1));
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!ValidUrlEscapes(target)) {
    return bad("bad percent-escape in the URL: '%' must start two hex digits (write '%' as %25)");
  }
  size_t q = target.find('?');
  req.path = UrlDecode(target.substr(0, q), /*plus_is_space=*/false);
  if (q != std::string_view::npos) ParseUrlParams(target.substr(q + 1), req.params);
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    std::string_view h = head.substr(0, eol);
    if (h.empty()) continue;
    size_t colon = h.find(':');
    if (colon == std::string_view::npos) {
      return bad("malformed header line");
    }
    std::string_view name = h.substr(0, colon);
    std::string_view value = Trim(h.substr(colon + 1));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      size_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9' || n > kMaxHttpBodyBytes) {
          return bad("bad Content-Length");
        }
        n = n * 10 + static_cast<size_t>(c - '0');
      }
      req.content_length = n;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      return bad("chunked bodies are not accepted");
    } else if (EqualsIgnoreCase(name, "Authorization")) {
      req.authorization = std::string(value);
    } else if (EqualsIgnoreCase(name, "Content-Type")) {
      req.form = value.rfind("application/x-www-form-urlencoded", 0) == 0;
    }
  }
  return Status::Ok();
}

Status ParseHttpForm(std::string_view body, HttpRequest* req) {
  if (!req->form) return Status::Ok();
  if (!ValidUrlEscapes(body)) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "bad percent-escape in the form body: '%' must start two hex digits");
  }
  ParseUrlParams(body, req->params);
  return Status::Ok();
}

std::string UrlDecode(std::string_view s, bool plus_is_space) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool ValidUrlEscapes(std::string_view s) {
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    if (i + 2 >= s.size() || !hex(s[i + 1]) || !hex(s[i + 2])) return false;
    i += 2;
  }
  return true;
}

void ParseUrlParams(std::string_view query, HttpParams& out) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      std::string_view key = pair.substr(0, eq);
      std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
      out.emplace(UrlDecode(key, true), UrlDecode(value, true));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
}

}  // namespace kvpool
