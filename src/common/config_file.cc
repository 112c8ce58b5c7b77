#include "common/config_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace kvpool {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

std::string TrimConfig(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// `text` up to a '#' (a comment), trimmed. CLI11 cuts values at '#' the same way, even inside
// quotes.
std::string WithoutComment(std::string_view text) {
  return TrimConfig(text.substr(0, std::min(text.find('#'), text.size())));
}

Result<std::string> ReadConfigText(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    return Status(err == ENOENT ? ErrorCode::FILE_NOT_FOUND : ErrorCode::FILE_OPEN_FAIL,
                  fmt::format("--config {}: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("--config {}: not a regular file", path));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
    return Status(ErrorCode::FILE_READ_FAIL,
                  fmt::format("--config {}: larger than 1 MiB; not a config file?", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(ErrorCode::FILE_OPEN_FAIL,
                  fmt::format("--config {}: cannot open: {}", path, std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Status(ErrorCode::FILE_READ_FAIL, fmt::format("--config {}: read error", path));
  return ss.str();
}

// One `KEY = VALUE` of the file (a multi-line array joined into one), where it starts and the
// section it sits in.
struct ConfigLine {
  int line = 0;
  std::string section;  // "" at the top
  std::string text;
};

class ConfigReader {
 public:
  ConfigReader(CLI::App& app, const std::string& path, std::string_view role, ConfigSource& source)
      : app_(app), path_(path), role_(role), source_(source) {}

  Status Apply(const std::string& text) {
    std::vector<ConfigLine> lines;
    KVPOOL_RETURN_IF_ERROR(Split(text, lines));
    for (const ConfigLine& l : lines) KVPOOL_RETURN_IF_ERROR(ApplyLine(l));
    return Status::Ok();
  }

 private:
  Status Bad(int line, const std::string& what) const {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("--config {} line {}: {}", path_, line, what));
  }

  std::string KeysHint() const {
    return fmt::format(
        "keys are the flags of kvpool {} without the dashes (kvpool {} --help), at "
        "the top of the file or under [{}]",
        role_, role_, role_);
  }

  // Sections, comments and blank lines are handled here; key lines are kept for ApplyLine.
  Status Split(const std::string& text, std::vector<ConfigLine>& out) const {
    std::istringstream in(text);
    std::string raw, section;
    for (int n = 1; std::getline(in, raw); ++n) {
      std::string line = TrimConfig(raw);
      if (line.empty() || line.front() == '#' || line.front() == ';') continue;
      if (line.front() == '[') {
        if (line.back() != ']') return Bad(n, fmt::format("'{}' is not a section ([NAME])", line));
        std::string name = TrimConfig(line.substr(1, line.size() - 2));
        if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
          name = TrimConfig(name.substr(1, name.size() - 2));  // TOML [[table]]
        }
        if (name != role_ && name != "default") {
          return Bad(n, fmt::format("unknown section [{}]; {}", name, KeysHint()));
        }
        section = name == "default" ? "" : name;
        continue;
      }
      size_t eq = line.find('=');
      if (eq == std::string::npos || TrimConfig(line.substr(0, eq)).empty()) {
        return Bad(n, fmt::format("'{}' is not KEY = VALUE", line));
      }
      ConfigLine l{n, section, ""};
      std::string value = WithoutComment(line.substr(eq + 1));
      // A list may span lines: joined up to the line that ends it with ']'.
      if (!value.empty() && value.front() == '[') {
        while (value.back() != ']') {
          if (!std::getline(in, raw)) return Bad(l.line, "array without its closing ']'");
          ++n;
          value += WithoutComment(raw);
        }
      }
      l.text = line.substr(0, eq) + "= " + value;
      out.push_back(std::move(l));
    }
    return Status::Ok();
  }

  Status ApplyLine(const ConfigLine& l) {
    std::vector<CLI::ConfigItem> items;
    try {
      std::istringstream one(l.text);
      items = formatter_.from_config(one);
    } catch (const CLI::Error& e) {
      return Bad(l.line, e.what());
    }
    if (items.empty()) return Bad(l.line, fmt::format("'{}' is not KEY = VALUE", l.text));
    for (const CLI::ConfigItem& item : items) KVPOOL_RETURN_IF_ERROR(ApplyItem(l, item));
    return Status::Ok();
  }

  Status ApplyItem(const ConfigLine& l, const CLI::ConfigItem& item) {
    std::vector<std::string> scope = item.parents;
    if (!l.section.empty()) scope.insert(scope.begin(), l.section);
    const std::string key = item.fullname();
    if (!(scope.empty() || (scope.size() == 1 && scope[0] == role_))) {
      return Bad(l.line, fmt::format("unknown key '{}'; {}", key, KeysHint()));
    }
    CLI::Option* op = app_.get_option_no_throw("--" + item.name);
    if (op == nullptr || !op->get_configurable() || op->get_lnames().empty() ||
        item.name == "config") {
      return Bad(l.line, fmt::format("unknown key '{}'; {}", key, KeysHint()));
    }
    if (auto [it, fresh] = applied_.emplace(op, l.line); !fresh) {
      return Bad(l.line, fmt::format("key '{}' set again (first on line {}); a list is written "
                                     "[\"a\", \"b\"]",
                                     key, it->second));
    }
    if (op->count() > 0) return Status::Ok();  // given on the command line, which wins
    try {
      if (op->get_expected_min() == 0) {  // a flag: true/false
        op->add_result(op->get_flag_value(item.name, formatter_.to_flag(item)));
      } else {
        op->add_result(item.inputs);
      }
      op->run_callback();
    } catch (const CLI::Error& e) {
      return Bad(l.line, fmt::format("key '{}': {}", key, e.what()));
    } catch (const std::exception& e) {
      return Bad(l.line, fmt::format("key '{}': {}", key, e.what()));
    }
    for (const std::string& name : op->get_lnames()) source_.lines[name] = l.line;
    return Status::Ok();
  }

  CLI::App& app_;
  const std::string& path_;
  std::string role_;
  ConfigSource& source_;
  CLI::ConfigTOML formatter_;
  std::map<const CLI::Option*, int> applied_;  // option -> the line that set it
};

}  // namespace

Status ApplyConfigText(CLI::App& app, const std::string& text, const std::string& path,
                       std::string_view role, ConfigSource& source) {
  source.path = path;
  source.lines.clear();
  return ConfigReader(app, source.path, role, source).Apply(text);
}

Status ApplyConfigFile(CLI::App& app, const std::string& path, std::string_view role,
                       ConfigSource& source) {
  auto text = ReadConfigText(path);
  if (!text.ok()) return text.status();
  return ApplyConfigText(app, *text, path, role, source);
}

void AddConfigFileFlag(CLI::App& app, std::string role, ConfigSource& source) {
  app.add_option("--config", source.path,
                 fmt::format("TOML/INI file of flags: KEY = VALUE with the flag names without "
                             "dashes, at the top or under [{}]; the command line wins",
                             role))
      ->configurable(false);
  app.final_callback([&app, &source, role] {
    if (source.path.empty()) return;
    std::string path = source.path;
    Status st = ApplyConfigFile(app, path, role, source);
    if (!st.ok()) throw CLI::ConfigError(fmt::format("kvpool {}: {}", role, st.ToString()), 2);
  });
}

Status WithConfigSource(Status st, const ConfigSource& source) {
  if (st.ok() || source.path.empty()) return st;
  const std::string& m = st.message();
  for (size_t at = m.find("--"); at != std::string::npos; at = m.find("--", at + 2)) {
    size_t end = at + 2;
    while (end < m.size() && (std::isalnum(static_cast<unsigned char>(m[end])) || m[end] == '_')) {
      ++end;
    }
    auto it = source.lines.find(std::string_view(m).substr(at + 2, end - at - 2));
    if (it != source.lines.end()) {
      return Status(st.code(), fmt::format("{} (set by {} line {})", m, source.path, it->second));
    }
  }
  return st;
}

}  // namespace kvpool
