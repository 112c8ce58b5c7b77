// The one definition of the client's options: every ClientOptions field by name, with the
// names Mooncake gives it, its kind and units, its default, the environment variables it may
// come from and what it accepts. The C++ API, Python setup(dict), the SGLang config loader and
// the CLI fill ClientOptions through this table, so names, units and validation agree.
//
// Threading: the table is immutable after static initialization; every function here is pure
// (no shared state) and may be called from any thread.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvpool/client.h"
#include "kvpool/status.h"

namespace kvpool {

enum class OptionKind {
  kString,      // any text
  kBool,        // true/false, 1/0, yes/no, on/off (case-insensitive)
  kSize,        // bytes: an integer or a number with a unit ("4gb", "512 MiB"; powers of 1024)
  kCount,       // a non-negative integer within the field's range
  kDurationMs,  // an integer number of milliseconds from 1 to one day
  kPort,        // 0-65535
};

// "string", "bool", "size", "count", "duration-ms", "port".
std::string_view OptionKindName(OptionKind kind);

struct ClientOptionDescriptor {
  std::string_view name;                  // the ClientOptions field name
  std::vector<std::string_view> aliases;  // other accepted keys (Mooncake's names)
  OptionKind kind;
  std::vector<std::string_view> env;  // variables it may come from, first wins
  std::string_view doc;               // one line
  // Parses `value` (already known to be of `kind`'s syntax) into `o`; INVALID_PARAMS otherwise.
  std::function<Status(std::string_view value, ClientOptions& o)> set;
  // The field of `o` as text in the syntax `set` accepts (so defaults come from ClientOptions{}).
  std::function<std::string(const ClientOptions& o)> get;
};

// Every option, in ClientOptions' declaration order.
std::span<const ClientOptionDescriptor> ClientOptionTable();

// The descriptor whose name or alias is `key` (exact, case-sensitive); nullptr if none.
const ClientOptionDescriptor* FindClientOption(std::string_view key);

// The known name or alias closest to `key` (edit distance), for "did you mean" messages.
// `extra` adds keys a caller accepts beside the table (Python setup(dict)'s own keys).
std::string_view ClosestClientOption(std::string_view key,
                                     std::span<const std::string_view> extra = {});

// Sets the option named `key` (name or alias) from its text form.
// Errors: INVALID_PARAMS naming the key, the value and what is accepted; for an unknown key,
// naming the closest known one.
Status ApplyClientOption(std::string_view key, std::string_view value, ClientOptions& o);

// Looks up one environment variable; nullopt when unset. The default reads the process
// environment through GetEnv (common/env.h), the one reader of the environment in library code.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup ProcessEnv();

// The value of option `name` (a table name) from the first of its environment variables that
// is set and non-empty in `env`; nullopt when none is (or `name` is no option). The client reads
// its secrets this way when no option gives them (client_security.cc).
std::optional<std::string> ClientOptionFromEnv(std::string_view name,
                                               const EnvLookup& env = ProcessEnv());

// A setting Python's setup() takes beside the table (no ClientOptions field) from its environment
// variable, read here with the table's so the environment is read where the configuration is
// built: "ssd_offload_path" from $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH (the SSD-offload disk
// tier's directory). nullopt when the variable is unset or empty, or `key` is no such setting.
std::optional<std::string> SetupSettingFromEnv(std::string_view key,
                                               const EnvLookup& env = ProcessEnv());

// Applies every option whose environment variable is set (non-empty) in `env`, leaving the
// others as they are. Errors: as ApplyClientOption, also naming the variable.
Status ApplyClientEnvironment(ClientOptions& o, const EnvLookup& env = ProcessEnv());

// The default of every option as text, from a default-constructed ClientOptions.
std::string ClientOptionDefault(const ClientOptionDescriptor& d);

// The table as a Markdown table (name, other names, kind, default, environment, meaning), one
// row per option: what `kvpool client-options` prints and docs/operations.md embeds (a test
// keeps the two equal).
std::string ClientOptionsMarkdown();

}  // namespace kvpool
