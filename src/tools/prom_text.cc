#include "tools/prom_text.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <optional>

namespace kvpool::tools {
namespace {

bool NameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool NameChar(char c) { return NameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

void SkipSpaces(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

std::optional<std::string> Name(std::string_view& s) {
  if (s.empty() || !NameStart(s.front())) return std::nullopt;
  size_t n = 1;
  while (n < s.size() && NameChar(s[n])) ++n;
  std::string name(s.substr(0, n));
  s.remove_prefix(n);
  return name;
}

// A quoted label value with \\, \" and \n escapes.
std::optional<std::string> Quoted(std::string_view& s) {
  if (s.empty() || s.front() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      s.remove_prefix(i + 1);
      return out;
    }
    if (c == '\\') {
      if (++i == s.size()) return std::nullopt;
      char e = s[i];
      out += e == 'n' ? '\n' : e;
    } else {
      out += c;
    }
  }
  return std::nullopt;  // unterminated
}

bool Labels(std::string_view& s, std::map<std::string, std::string>* labels) {
  s.remove_prefix(1);  // '{'
  for (;;) {
    SkipSpaces(s);
    if (!s.empty() && s.front() == '}') {
      s.remove_prefix(1);
      return true;
    }
    auto name = Name(s);
    if (!name) return false;
    SkipSpaces(s);
    if (s.empty() || s.front() != '=') return false;
    s.remove_prefix(1);
    SkipSpaces(s);
    auto value = Quoted(s);
    if (!value) return false;
    (*labels)[*name] = std::move(*value);
    SkipSpaces(s);
    if (!s.empty() && s.front() == ',') s.remove_prefix(1);
  }
}

std::optional<double> Value(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && s[n] != ' ' && s[n] != '\t') ++n;
  std::string_view v = s.substr(0, n);
  s.remove_prefix(n);
  if (v == "+Inf" || v == "Inf") return std::numeric_limits<double>::infinity();
  if (v == "-Inf") return -std::numeric_limits<double>::infinity();
  if (v == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  double d = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return d;
}

std::optional<PromSample> Line(std::string_view line) {
  SkipSpaces(line);
  PromSample sample;
  auto name = Name(line);
  if (!name) return std::nullopt;
  sample.name = std::move(*name);
  SkipSpaces(line);
  if (!line.empty() && line.front() == '{' && !Labels(line, &sample.labels)) return std::nullopt;
  SkipSpaces(line);
  auto value = Value(line);
  if (!value) return std::nullopt;
  sample.value = *value;
  return sample;  // an optional timestamp may follow; ignored
}

}  // namespace

const std::string& PromSample::label(const std::string& name) const {
  static const std::string kEmpty;
  auto it = labels.find(name);
  return it == labels.end() ? kEmpty : it->second;
}

std::vector<PromSample> ParsePromText(std::string_view text, size_t* skipped) {
  std::vector<PromSample> out;
  size_t bad = 0;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view trimmed = line;
    SkipSpaces(trimmed);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (auto s = Line(line)) {
      out.push_back(std::move(*s));
    } else {
      ++bad;
    }
  }
  if (skipped != nullptr) *skipped = bad;
  return out;
}

}  // namespace kvpool::tools
