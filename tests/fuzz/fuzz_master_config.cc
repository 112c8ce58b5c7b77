// The master's configuration loader: AddMasterFlags + ValidateMasterOptions on an arbitrary
// command line (NUL-separated arguments) or an arbitrary --config file (INI/TOML). Whatever the
// input, parsing ends in options or a CLI11 ParseError (what `kvpool master` reports as usage),
// and validation in OK or INVALID_PARAMS. Any other exception would kill `kvpool master`
// (main catches only CLI::ParseError), so it is a crash here. A config file goes through
// ApplyConfigText (what --config does after the command line), which must end in OK or an
// error naming the file.
//
// Input: [mode u8][text...]; mode even = command line, odd = config file.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/config_file.h"
#include "fuzz_input.h"
#include "master/master_options.h"

using namespace kvpool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  bool config_file = (in.U8() & 1) != 0;
  std::string text(in.Rest());
  CLI::App app("master");
  master::MasterOptions o;
  master::AddMasterFlags(app, o);
  try {
    if (config_file) {
      const char* argv[] = {"kvpool-master"};
      app.parse(1, argv);
      Status st = ApplyConfigText(app, text, "fuzz.toml", "master", o.config_source);
      if (!st.ok() && st.message().find("--config fuzz.toml") != 0) std::abort();
      if (!st.ok()) return 0;
    } else {
      std::vector<std::string> args = {"kvpool-master"};
      size_t start = 0;
      for (size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == '\0') {
          args.push_back(text.substr(start, i - start));
          start = i + 1;
        }
      }
      std::vector<const char*> argv;
      for (const auto& a : args) argv.push_back(a.c_str());
      app.parse(static_cast<int>(argv.size()), argv.data());
    }
  } catch (const CLI::ParseError&) {
    return 0;
  }
  Status st = master::ValidateMasterOptions(o);
  if (!st.ok() && (st.code() != ErrorCode::INVALID_PARAMS || st.message().empty())) std::abort();
  return 0;
}
