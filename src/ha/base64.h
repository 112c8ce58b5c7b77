// Standard base64 (RFC 4648, with padding), as etcd's JSON gateway carries keys and values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvpool::ha {

std::string Base64Encode(std::string_view bytes);
// nullopt when `text` is not valid padded base64.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace kvpool::ha
