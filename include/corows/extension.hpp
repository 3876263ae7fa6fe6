// The Sec-WebSocket-Extensions header grammar of RFC 6455 §9.1.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace corows {

/// One `name[=value]` parameter of an extension; a quoted value is stored unquoted.
struct extension_param {
    std::string name;
    std::optional<std::string> value;
};

/// One extension offer or response: a token and its parameters, in order.
struct extension {
    std::string name;
    std::vector<extension_param> params;
};

/// Parses a Sec-WebSocket-Extensions value (or several joined with ", ") and appends each
/// element to `out`; returns error::bad_extension on any deviation from the grammar.
std::error_code parse_extensions(std::string_view header, std::vector<extension>& out);

} // namespace corows
