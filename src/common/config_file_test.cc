// The --config loader on a CLI11 app: values by type, flags, lists, the command line's
// precedence, and the file/line/key in every error.
#include "common/config_file.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvpool {
namespace {

struct Flags {
  int port = 1;
  std::string host = "h";
  bool flag = true;
  bool other_flag = false;
  std::vector<std::string> list;
  ConfigSource source;
};

// Parses `args` into a fresh app of role "node" with the flags above, then applies `text`.
Status Apply(Flags& f, const std::string& text, const std::vector<std::string>& args = {}) {
  CLI::App app("node");
  app.add_option("--port,--data_port", f.port);
  app.add_option("--host", f.host);
  app.add_flag("--flag", f.flag);
  app.add_flag("--other_flag", f.other_flag);
  app.add_option("--list", f.list);
  std::vector<const char*> argv = {"node"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return ApplyConfigText(app, text, "f.toml", "node", f.source);
}

TEST(ConfigFileTest, SetsValuesFlagsAndLists) {
  Flags f;
  Status st = Apply(f,
                    "port = 7\n"
                    "host = \"a b\"  # why\n"
                    "flag = false\n"
                    "[node]\n"
                    "other_flag = true\n"
                    "list = [\"x\",  # first\n"
                    "        \"y\"]\n"
                    "# after\n");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(f.port, 7);
  EXPECT_EQ(f.host, "a b");
  EXPECT_FALSE(f.flag);
  EXPECT_TRUE(f.other_flag);
  EXPECT_EQ(f.list, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(f.source.lines.at("port"), 1);
  EXPECT_EQ(f.source.lines.at("data_port"), 1);  // every name of the option
  EXPECT_EQ(f.source.lines.at("list"), 6);

  Flags g;  // a one-line list with a comment after it
  st = Apply(g, "list = [\"a\", \"b\"]  # two\nport = 3\n");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(g.list, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g.port, 3);

  Flags h;  // TOML's usual multi-line form: the '[' alone on the key's line
  st = Apply(h, "list = [\n  \"a\",\n  \"b\"\n]\nport = 4\n");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(h.list, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(h.port, 4);
  EXPECT_EQ(h.source.lines.at("list"), 1);
}

TEST(ConfigFileTest, CommandLineWins) {
  Flags f;
  ASSERT_TRUE(Apply(f, "port = 7\nhost = x\n", {"--port", "9"}).ok());
  EXPECT_EQ(f.port, 9);
  EXPECT_EQ(f.host, "x");
  EXPECT_EQ(f.source.lines.count("port"), 0u);  // not from the file: not blamed on it
}

TEST(ConfigFileTest, ErrorsNameFileLineAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"port = x\n", "f.toml line 1: key 'port': "},
      {"\n\nprot = 1\n", "f.toml line 3: unknown key 'prot'"},
      {"flag = perhaps\n", "f.toml line 1: key 'flag': "},
      {"port = 1\nport = 2\n", "f.toml line 2: key 'port' set again (first on line 1)"},
      {"port = 1\ndata_port = 2\n", "f.toml line 2: key 'data_port' set again (first on line 1)"},
      {"[master]\nport = 1\n", "f.toml line 1: unknown section [master]"},
      {"[node\n", "f.toml line 1: '[node' is not a section"},
      {"port\n", "f.toml line 1: 'port' is not KEY = VALUE"},
      {"= 3\n", "f.toml line 1: '= 3' is not KEY = VALUE"},
      {"list = [\"a\"\n", "f.toml line 1: array without its closing ']'"},
  };
  for (const auto& [text, expected] : cases) {
    Flags f;
    Status st = Apply(f, text);
    EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS) << text;
    EXPECT_NE(st.message().find("--config " + expected), std::string::npos)
        << text << " -> " << st.ToString();
  }
}

TEST(ConfigFileTest, MissingFile) {
  CLI::App app("node");
  ConfigSource source;
  Status st = ApplyConfigFile(app, "/nonexistent/kvpool.toml", "node", source);
  EXPECT_EQ(st.code(), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(st.message(), "--config /nonexistent/kvpool.toml: No such file or directory");
}

TEST(ConfigFileTest, WithConfigSourceBlamesTheLine) {
  ConfigSource source{"f.toml", {{"port", 3}}};
  Status st(ErrorCode::INVALID_PARAMS, "--port=0 is out of range");
  EXPECT_EQ(WithConfigSource(st, source).message(),
            "--port=0 is out of range (set by f.toml line 3)");
  Status other(ErrorCode::INVALID_PARAMS, "--host must not be empty");
  EXPECT_EQ(WithConfigSource(other, source).message(), other.message());
}

}  // namespace
}  // namespace kvpool
