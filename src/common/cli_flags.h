// Small helpers for registering a role's flags on CLI11 (kvpool master, kvpool node).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kvpool {

// Registers flag `name` taking an integer count of `Duration`'s unit (--rpc_timeout_ms 5000)
// into `field`; its help shows the field's current value as the default. `Rep` is the integer
// type CLI11 parses (a value it cannot hold is a parse error).
template <typename Rep = int64_t, typename Duration>
CLI::Option* AddDurationFlag(CLI::App& app, const std::string& name, Duration& field,
                             const std::string& help) {
  return app
      .add_option_function<Rep>(
          name, [&field](Rep v) { field = Duration(v); }, help)
      ->default_str(std::to_string(field.count()));
}

}  // namespace kvpool
