// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/query.hpp>

#include <cstddef>

namespace corows {
namespace {

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes `s` into `out`; false at the first malformed escape when `strict` (out is then
// partial), else such a '%' is copied as it is.
bool decode_into(std::string_view s, bool plus_is_space, bool strict, std::string& out) {
    out.clear();
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '+' && plus_is_space) {
            out += ' ';
            continue;
        }
        if (c == '%' && i + 2 < s.size()) {
            const int hi = hex_value(s[i + 1]);
            const int lo = hex_value(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out += static_cast<char>(hi * 16 + lo);
                i += 2;
                continue;
            }
        }
        if (c == '%' && strict) return false;
        out += c;
    }
    return true;
}

// Calls `f(name, value)` with each piece's raw (still encoded) name and value until it
// returns true.
template <class F> void each_piece(std::string_view query, F&& f) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view piece = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (piece.empty()) continue;
        const auto eq = piece.find('=');
        const std::string_view name = piece.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? std::string_view{} : piece.substr(eq + 1);
        if (f(name, value)) return;
    }
}

// True if the encoded `raw` decodes to `name`; `scratch` is reused across calls.
bool names_match(std::string_view raw, std::string_view name, std::string& scratch) {
    // Most names carry no escape: compare them as they are, without a copy.
    if (raw.find_first_of("%+") == std::string_view::npos) return raw == name;
    decode_into(raw, true, false, scratch);
    return scratch == name;
}

} // namespace

std::string percent_decode(std::string_view s, bool plus_is_space) {
    std::string out;
    decode_into(s, plus_is_space, false, out);
    return out;
}

std::optional<std::string> percent_decode_strict(std::string_view s) {
    std::string out;
    if (!decode_into(s, false, true, out)) return std::nullopt;
    return out;
}

std::vector<query_param> parse_query(std::string_view query) {
    std::vector<query_param> out;
    each_piece(query, [&](std::string_view name, std::string_view value) {
        out.push_back({percent_decode(name, true), percent_decode(value, true)});
        return false;
    });
    return out;
}

std::optional<std::string> find_query_param(std::string_view query, std::string_view name) {
    std::optional<std::string> found;
    std::string scratch;
    each_piece(query, [&](std::string_view raw_name, std::string_view value) {
        if (!names_match(raw_name, name, scratch)) return false;
        found = percent_decode(value, true);
        return true;
    });
    return found;
}

std::vector<std::string> find_query_params(std::string_view query, std::string_view name) {
    std::vector<std::string> found;
    std::string scratch;
    each_piece(query, [&](std::string_view raw_name, std::string_view value) {
        if (names_match(raw_name, name, scratch)) found.push_back(percent_decode(value, true));
        return false;
    });
    return found;
}

} // namespace corows
