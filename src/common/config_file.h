// `--config FILE` for the long-running roles (kvpool master, kvpool node): a TOML/INI file whose
// keys are the role's long flag names without the dashes, applied to the flags CLI11 registered
// on the role's (sub)command. CLI11's own set_config reads a file only for the top-level app and
// reports neither line nor file, so this loader drives CLI11's parser one logical line at a time
// and names the file, the line and the key in every error.
//
//   # master.toml                 [master]             master.rpc_port = 50052
//   rpc_port = 50052              rpc_port = 50052
//   log_level = "debug"
//   tenant_quota = ["a=8GB", "b=1GB"]
//
// Keys go at the top of the file, under a `[ROLE]` section or prefixed `ROLE.`; any other
// section is an error. Flags given on the command line win over the file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool {

// Which options a config file set, for messages about their values (see WithConfigSource).
struct ConfigSource {
  std::string path;                               // the --config FILE ("" when none was given)
  std::map<std::string, int, std::less<>> lines;  // long flag name (no dashes) -> its line
};

// Registers `--config FILE` on `app` (the role's command, e.g. the `master` subcommand) and sets
// `app`'s final callback to apply the file once the command line is parsed; `source` (which must
// outlive parsing) records what the file set. On any error the callback throws CLI::ConfigError
// (a CLI::ParseError: `kvpool` reports it as a usage error, exit 2) whose message is
// "kvpool ROLE: " plus the Status of ApplyConfigFile. `app` must have no other final callback.
void AddConfigFileFlag(CLI::App& app, std::string role, ConfigSource& source);

// Applies the file at `path` to the options of `app` (already parsed from the command line; a
// flag given there is left as it is). Errors, each naming `path` (and the line and key):
// FILE_NOT_FOUND when it does not exist; FILE_OPEN_FAIL / FILE_READ_FAIL when it is not a
// readable regular file (or is over 1 MiB); INVALID_PARAMS for a line that is not
// `KEY = VALUE`, `[SECTION]`, a comment or blank, an unknown key or section, a key given twice,
// or a value the flag refuses (type or CLI11 check).
Status ApplyConfigFile(CLI::App& app, const std::string& path, std::string_view role,
                       ConfigSource& source);

// ApplyConfigFile on text already read (`path` only names it in messages); for the fuzzer.
Status ApplyConfigText(CLI::App& app, const std::string& text, const std::string& path,
                       std::string_view role, ConfigSource& source);

// `st` with " (set by FILE line N)" appended when its message names a flag (`--NAME`) that
// `source` says came from the config file; else `st` unchanged. For range errors found after
// parsing (ValidateMasterOptions, ValidateNodeOptions).
Status WithConfigSource(Status st, const ConfigSource& source);

}  // namespace kvpool
