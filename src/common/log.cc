#include "common/log.h"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>

#include "common/keys.h"

namespace kvpool {
namespace {

// %* in the pattern: the message with PrintableBytes applied. Log lines quote keys, which are
// opaque bytes: a key's invalid UTF-8 or control bytes must not make the log unreadable or
// inject terminal escapes and fake lines.
class PrintableMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        PrintableBytes(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PrintableMessage>();
  }
};

}  // namespace

Status InitLogging(std::string_view level, std::string_view role) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("log level '{}' is unknown (use trace, debug, info, warn, error, "
                              "critical or off)",
                              level));
  }
  spdlog::set_level(lvl);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PrintableMessage>('*').set_pattern(
      fmt::format("%Y-%m-%d %H:%M:%S.%e %^%L%$ [{}:%P] %*", role));
  spdlog::set_formatter(std::move(formatter));
  return Status::Ok();
}

}  // namespace kvpool
