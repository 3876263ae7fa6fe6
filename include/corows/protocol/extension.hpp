// SPDX-License-Identifier: BSL-1.0
// The Sec-WebSocket-Extensions header grammar of RFC 6455 §9.1.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace corows {

/// One `name[=value]` parameter of an extension; a quoted value is stored unquoted.
struct extension_param {
    std::string name; ///< the parameter's name, as sent
    std::optional<std::string> value; ///< its value, unquoted; none for a bare name

    friend bool operator==(const extension_param&, const extension_param&) = default;
};

/// One extension offer or response: a token and its parameters, in order.
struct extension {
    std::string name; ///< the extension token, e.g. "permessage-deflate"
    std::vector<extension_param> params; ///< its parameters, in the order sent

    friend bool operator==(const extension&, const extension&) = default;
};

/// Parses a Sec-WebSocket-Extensions value (or several joined with ", ") and appends each
/// element to `out`; returns error::bad_extension on any deviation from the grammar.
///
/// Grammar (RFC 6455 §9.1 with RFC 9110 list and whitespace rules):
///   extension-list = 1#extension; extension = token *( OWS ";" OWS param );
///   param = token [ OWS "=" OWS ( token / quoted-string ) ]; OWS = *( SP / HTAB ).
/// - Empty list elements (", ,", a leading or trailing comma) are skipped, as RFC 9110
///   §5.6.1.2 asks of recipients, but at least one extension must remain: an empty or
///   all-blank value is an error. (A caller that wants to tolerate an empty header field
///   should not call this for it.)
/// - A quoted-string value is unescaped (backslash-pairs) and must then be a token (§9.1);
///   `""` is therefore an error.
/// - Names and values keep their case; matching them is the consumer's business.
/// On error `out` may already hold the elements before the bad one.
std::error_code parse_extensions(std::string_view header, std::vector<extension>& out);

/// Writes `ext` in the canonical form `name; param; param=value` (values unquoted, so a
/// value that is not a token does not survive parse_extensions()).
std::string format_extension(const extension& ext);

/// Writes `exts` joined with ", " (the inverse of parse_extensions() for token values).
std::string format_extensions(std::span<const extension> exts);

} // namespace corows
