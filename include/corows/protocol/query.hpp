// SPDX-License-Identifier: BSL-1.0
// A URL query's parameters (?room=lobby&tag=a&tag=b), percent-decoded: what a server reads
// from an upgrade request's target (http_request::query_param()).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corows {

/// `s` with every "%XX" escape decoded (RFC 3986 §2.1), and '+' read as a space if
/// `plus_is_space` (HTML forms' application/x-www-form-urlencoded, as browsers send query
/// strings). A '%' without two hex digits after it is kept as written, as browsers do. The
/// result is bytes: it may hold any value, NUL and invalid UTF-8 included.
std::string percent_decode(std::string_view s, bool plus_is_space = false);

/// As percent_decode(s), '+' kept, but nullopt where a '%' lacks two hex digits after it: for
/// values that must not silently differ from what was meant (credentials).
std::optional<std::string> percent_decode_strict(std::string_view s);

/// One parameter of a query: its name and value, percent-decoded.
struct query_param {
    std::string name;  ///< before the first '=' of its piece
    std::string value; ///< after it; empty for a piece without '=' ("?debug")
    /// Field-by-field equality.
    friend bool operator==(const query_param&, const query_param&) = default;
};

/// The parameters of `query` (a target's part after '?', as http_request::query() gives it),
/// in order: pieces between '&' (empty ones skipped), each split at its first '=', decoded
/// with '+' as a space. Repeated names stay repeated.
std::vector<query_param> parse_query(std::string_view query);

/// The value of the first parameter of `query` named `name` (compared after decoding), or
/// nullopt if none is; decodes only what it returns.
std::optional<std::string> find_query_param(std::string_view query, std::string_view name);

/// The values of every parameter of `query` named `name`, in order (?tag=a&tag=b: "a", "b").
std::vector<std::string> find_query_params(std::string_view query, std::string_view name);

} // namespace corows
