// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/ascii.hpp>
#include <corows/protocol/http.hpp>
#include <corows/protocol/http_body.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace corows {
namespace {

using detail::iequals;
using detail::is_ows;
using detail::is_token;

// HT is the one control byte a field value may hold (RFC 9110 §5.5).
constexpr bool is_forbidden_control(unsigned char c) noexcept {
    return (c < 0x20 && c != '\t') || c == 0x7F;
}

std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

// Calls f(element) for each non-empty, OWS-trimmed element of a comma-separated list; stops
// early when f returns true and reports whether it did.
template <class F>
bool for_each_element(std::string_view list, F&& f) {
    while (true) {
        const auto comma = list.find(',');
        const auto element = trim_ows(list.substr(0, comma));
        if (!element.empty() && f(element)) return true;
        if (comma == std::string_view::npos) return false;
        list.remove_prefix(comma + 1);
    }
}

void check_field(std::string_view name, std::string_view value) {
    if (!is_token(name)) throw std::invalid_argument("corows: HTTP field name is not a token");
    for (char c : value)
        if (is_forbidden_control(static_cast<unsigned char>(c)))
            throw std::invalid_argument("corows: HTTP field value holds a control byte");
}

// Parses "HTTP/" DIGIT "." DIGIT into major * 10 + minor.
std::optional<unsigned> parse_version(std::string_view s) noexcept {
    if (s.size() != 8 || s.substr(0, 5) != "HTTP/" || s[6] != '.') return std::nullopt;
    const auto d1 = static_cast<unsigned char>(s[5]);
    const auto d2 = static_cast<unsigned char>(s[7]);
    if (d1 < '0' || d1 > '9' || d2 < '0' || d2 > '9') return std::nullopt;
    return (d1 - '0') * 10u + (d2 - '0');
}

void append_version(std::string& out, unsigned version) {
    out += "HTTP/";
    out += static_cast<char>('0' + version / 10 % 10);
    out += '.';
    out += static_cast<char>('0' + version % 10);
}

void append_fields(std::string& out, const http_fields& fields) {
    for (const auto& f : fields.all()) {
        out += f.name;
        out += ": ";
        out += f.value;
        out += "\r\n";
    }
    out += "\r\n";
}

// Splits off the next CRLF-terminated line; the reader guarantees every line ends in CRLF.
std::string_view next_line(std::string_view& rest) noexcept {
    const auto end = rest.find("\r\n");
    const auto line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 2);
    return line;
}

// Parses the field lines that follow the start line, joining obs-fold continuations with a
// single space (RFC 9112 §5.2).
std::error_code parse_fields(std::string_view rest, http_fields& out) {
    std::string name;
    std::string value;
    bool have_field = false;
    auto flush = [&] {
        if (have_field) out.add(name, value);
    };
    while (!rest.empty()) {
        const auto line = next_line(rest);
        if (line.empty()) break; // the blank line that ends the head
        if (is_ows(line.front())) {
            // A continuation before any field would attach to the start line: refuse it.
            if (!have_field) return error::http_parse_error;
            const auto more = trim_ows(line);
            if (!more.empty()) {
                if (!value.empty()) value += ' ';
                value += more;
            }
            continue;
        }
        flush();
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) return error::http_parse_error;
        // Whitespace before the colon fails is_token: RFC 9112 §5.1 demands a 400 for it.
        const auto field_name = line.substr(0, colon);
        if (!is_token(field_name)) return error::http_parse_error;
        name.assign(field_name);
        value.assign(trim_ows(line.substr(colon + 1)));
        have_field = true;
    }
    flush();
    return {};
}

} // namespace

// ---- http_fields ----

void http_fields::add(std::string_view name, std::string_view value) {
    check_field(name, value);
    fields_.push_back({std::string(name), std::string(value)});
}

void http_fields::set(std::string_view name, std::string_view value) {
    check_field(name, value);
    erase(name);
    fields_.push_back({std::string(name), std::string(value)});
}

std::size_t http_fields::erase(std::string_view name) noexcept {
    const auto before = fields_.size();
    std::erase_if(fields_, [&](const http_field& f) { return iequals(f.name, name); });
    return before - fields_.size();
}

std::optional<std::string_view> http_fields::find(std::string_view name) const noexcept {
    for (const auto& f : fields_)
        if (iequals(f.name, name)) return std::string_view(f.value);
    return std::nullopt;
}

std::vector<std::string_view> http_fields::values(std::string_view name) const {
    std::vector<std::string_view> out;
    for (const auto& f : fields_)
        if (iequals(f.name, name)) out.push_back(f.value);
    return out;
}

std::size_t http_fields::count(std::string_view name) const noexcept {
    return static_cast<std::size_t>(std::count_if(
        fields_.begin(), fields_.end(), [&](const http_field& f) { return iequals(f.name, name); }));
}

std::optional<std::string> http_fields::joined(std::string_view name) const {
    std::optional<std::string> out;
    for (const auto& f : fields_) {
        if (!iequals(f.name, name)) continue;
        if (out) {
            *out += ", ";
            *out += f.value;
        } else {
            out.emplace(f.value);
        }
    }
    return out;
}

std::vector<std::string_view> http_fields::list(std::string_view name) const {
    std::vector<std::string_view> out;
    for (const auto& f : fields_)
        if (iequals(f.name, name))
            for_each_element(f.value, [&](std::string_view e) {
                out.push_back(e);
                return false;
            });
    return out;
}

bool http_fields::has_token(std::string_view name, std::string_view token) const noexcept {
    for (const auto& f : fields_)
        if (iequals(f.name, name) &&
            for_each_element(f.value, [&](std::string_view e) { return iequals(e, token); }))
            return true;
    return false;
}

// ---- messages ----

std::string_view http_request::path() const noexcept {
    std::string_view t = target;
    if (!t.empty() && t.front() != '/') {
        // absolute-form (RFC 9112 §3.2.2): drop "scheme://authority".
        const auto scheme_end = t.find("://");
        if (scheme_end != std::string_view::npos) {
            t.remove_prefix(scheme_end + 3);
            const auto path_start = t.find_first_of("/?#");
            t.remove_prefix(path_start == std::string_view::npos ? t.size() : path_start);
            if (t.empty() || t.front() != '/') return "/";
        }
    }
    return t.substr(0, t.find_first_of("?#"));
}

std::string_view http_request::query() const noexcept {
    std::string_view t = target;
    const auto q = t.find('?');
    if (q == std::string_view::npos) return {};
    t.remove_prefix(q + 1);
    return t.substr(0, t.find('#'));
}

std::string http_request::to_string() const {
    std::string out;
    out.reserve(64 + target.size() + fields.size() * 32);
    out += method;
    out += ' ';
    out += target;
    out += ' ';
    append_version(out, version);
    out += "\r\n";
    append_fields(out, fields);
    return out;
}

std::string http_response::to_string() const {
    std::string out;
    out.reserve(64 + reason.size() + fields.size() * 32);
    append_version(out, version);
    out += ' ';
    out += static_cast<char>('0' + status / 100 % 10);
    out += static_cast<char>('0' + status / 10 % 10);
    out += static_cast<char>('0' + status % 10);
    out += ' ';
    out += reason;
    out += "\r\n";
    append_fields(out, fields);
    return out;
}

std::string_view reason_phrase(unsigned status) noexcept {
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 426: return "Upgrade Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

// ---- responses ----

std::string build_response(const http_response& res) {
    const bool bodiless = response_has_no_body(res.status);
    const bool framed = res.fields.count("Content-Length") != 0 || res.fields.count("Transfer-Encoding") != 0;
    std::string out;
    if (res.reason.empty() || (!bodiless && !framed)) {
        http_response copy = res;
        if (copy.reason.empty()) copy.reason = reason_phrase(res.status);
        if (!bodiless && !framed) copy.fields.add("Content-Length", std::to_string(res.body.size()));
        out = copy.to_string();
    } else {
        out = res.to_string();
    }
    out += res.body;
    return out;
}

// ---- chunked bodies ----

bool is_chunked_only(const http_fields& fields) {
    const auto codings = fields.list("Transfer-Encoding");
    return codings.size() == 1 && iequals(codings.front(), "chunked");
}

http_feed_result http_chunked_decoder::feed(std::span<const std::uint8_t> bytes, std::string& body) {
    http_feed_result r;
    r.status = status_;
    if (status_ != http_parse_status::need_more) return r;
    auto fail = [&](error e) {
        status_ = http_parse_status::failed;
        r.status = status_;
        r.error = e;
    };
    // Counts a byte of size lines' extensions and trailers: these are not data, and only the
    // limit keeps a peer from sending them forever.
    auto overhead = [&] {
        if (++overhead_ > max_overhead_) fail(error::bad_chunked_encoding);
    };
    std::size_t i = 0;
    while (i < bytes.size() && status_ == http_parse_status::need_more) {
        const auto c = bytes[i];
        if (state_ == state::data) {
            const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_, bytes.size() - i));
            body.append(reinterpret_cast<const char*>(bytes.data()) + i, take);
            i += take;
            chunk_ -= take;
            if (chunk_ == 0) state_ = state::data_cr;
            continue;
        }
        ++i;
        switch (state_) {
        case state::size: {
            int digit = -1;
            if (c >= '0' && c <= '9') digit = c - '0';
            else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
            if (digit >= 0) {
                if (chunk_ > (max_body_ - decoded_) / 16) {
                    fail(error::body_too_large);
                    break;
                }
                chunk_ = chunk_ * 16 + static_cast<unsigned>(digit);
                if (chunk_ > max_body_ - decoded_) fail(error::body_too_large);
                digits_ = true;
            } else if (!digits_) {
                fail(error::bad_chunked_encoding);
            } else if (c == '\r') {
                state_ = state::size_lf;
            } else if (c == ';' || c == ' ' || c == '\t') {
                state_ = state::ext;
                overhead();
            } else {
                fail(error::bad_chunked_encoding);
            }
            break;
        }
        case state::ext:
            if (c == '\r') state_ = state::size_lf;
            else if (c == '\n') fail(error::bad_chunked_encoding);
            else overhead();
            break;
        case state::size_lf:
            if (c != '\n') {
                fail(error::bad_chunked_encoding);
            } else if (chunk_ == 0) {
                state_ = state::trailer_start;
            } else {
                decoded_ += static_cast<std::size_t>(chunk_);
                state_ = state::data;
            }
            break;
        case state::data_cr:
            if (c == '\r') state_ = state::data_lf;
            else fail(error::bad_chunked_encoding);
            break;
        case state::data_lf:
            if (c != '\n') {
                fail(error::bad_chunked_encoding);
                break;
            }
            digits_ = false;
            state_ = state::size;
            break;
        case state::trailer_start:
            if (c == '\r') {
                state_ = state::final_lf;
                break;
            }
            state_ = state::trailer;
            [[fallthrough]];
        case state::trailer:
            if (c == '\r') state_ = state::trailer_lf;
            else if (c == '\n') fail(error::bad_chunked_encoding);
            else overhead();
            break;
        case state::trailer_lf:
            if (c == '\n') state_ = state::trailer_start;
            else fail(error::bad_chunked_encoding);
            break;
        case state::final_lf:
            if (c == '\n') status_ = http_parse_status::complete;
            else fail(error::bad_chunked_encoding);
            break;
        case state::data: break; // handled above
        }
    }
    r.consumed = i;
    r.status = status_;
    return r;
}

// ---- body framing ----

std::error_code body_framing(const http_fields& fields, http_body_framing& out) {
    http_body_framing f;
    f.transfer_encoding = fields.count("Transfer-Encoding") != 0;
    for (const auto& field : fields.all()) {
        if (!iequals(field.name, "Content-Length")) continue;
        // RFC 9110 §8.6 lets a recipient accept "5, 5"; every element must be the same number.
        std::size_t elements = 0;
        const bool failed = for_each_element(field.value, [&](std::string_view element) {
            ++elements;
            std::uint64_t n = 0;
            for (char c : element) {
                if (c < '0' || c > '9') return true;
                const auto digit = static_cast<unsigned>(c - '0');
                if (n > (UINT64_MAX - digit) / 10) return true;
                n = n * 10 + digit;
            }
            if (f.has_content_length && n != f.content_length) return true;
            f.has_content_length = true;
            f.content_length = n;
            return false;
        });
        if (failed || elements == 0) return error::bad_content_length;
    }
    if (f.transfer_encoding && f.has_content_length) return error::conflicting_length;
    out = f;
    return {};
}

// ---- head reader ----

namespace detail {

http_feed_result http_head_reader::feed(std::span<const std::uint8_t> bytes) {
    http_feed_result r;
    // Bytes of this call that belong in head_ start here; skipped leading CRLFs move it on.
    std::size_t keep_from = 0;
    std::size_t i = 0;
    auto fail = [&](error e) {
        r.status = http_parse_status::failed;
        r.error = e;
    };
    for (; i < bytes.size() && r.status == http_parse_status::need_more; ++i) {
        const auto c = bytes[i];
        if (++total_ > limits_.max_head_size) {
            fail(error::header_too_large);
            continue;
        }
        switch (state_) {
        case state::leading:
            if (c == '\r') {
                state_ = state::leading_cr;
                keep_from = i + 1;
            } else if (c == '\n' || is_forbidden_control(c)) {
                fail(error::http_parse_error);
            } else {
                state_ = state::in_line;
            }
            break;
        case state::leading_cr:
            if (c != '\n') fail(error::http_parse_error);
            state_ = state::leading;
            keep_from = i + 1;
            break;
        case state::line_start:
            if (c == '\r') {
                state_ = state::final_cr;
                break;
            }
            if (c == '\n' || is_forbidden_control(c)) {
                fail(error::http_parse_error);
                break;
            }
            // A line starting with SP or HT continues the previous field (obs-fold).
            if (!is_ows(static_cast<char>(c)) && ++lines_ > limits_.max_fields) {
                fail(error::too_many_headers);
                break;
            }
            state_ = state::in_line;
            break;
        case state::in_line:
            if (c == '\r') state_ = state::cr;
            else if (c == '\n' || is_forbidden_control(c)) fail(error::http_parse_error);
            break;
        case state::cr:
            if (c != '\n') fail(error::http_parse_error);
            state_ = state::line_start;
            break;
        case state::final_cr:
            if (c != '\n') fail(error::http_parse_error);
            else r.status = http_parse_status::complete;
            break;
        }
    }
    r.consumed = i;
    if (r.status != http_parse_status::failed && i > keep_from)
        head_.append(reinterpret_cast<const char*>(bytes.data()) + keep_from, i - keep_from);
    return r;
}

void http_head_reader::reset() noexcept {
    head_.clear();
    total_ = 0;
    lines_ = 0;
    state_ = state::leading;
}

std::error_code parse_head(std::string_view head, http_request& out) {
    auto rest = head;
    const auto line = next_line(rest);
    // request-line = method SP request-target SP HTTP-version, single spaces (RFC 9112 §3).
    const auto sp1 = line.find(' ');
    if (sp1 == std::string_view::npos) return error::http_parse_error;
    const auto sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) return error::http_parse_error;
    const auto method = line.substr(0, sp1);
    const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const auto version = parse_version(line.substr(sp2 + 1));
    if (!is_token(method) || target.empty() || !version) return error::http_parse_error;
    // Visible ASCII only: browsers percent-encode everything else.
    for (char ch : target) {
        const auto c = static_cast<unsigned char>(ch);
        if (c <= ' ' || c >= 0x7F) return error::http_parse_error;
    }
    out.method.assign(method);
    out.target.assign(target);
    out.version = *version;
    out.fields.clear();
    return parse_fields(rest, out.fields);
}

std::error_code parse_head(std::string_view head, http_response& out) {
    auto rest = head;
    const auto line = next_line(rest);
    // status-line = HTTP-version SP status-code SP [reason-phrase] (RFC 9112 §4); the SP
    // before an empty reason is often left out, so it is optional here.
    if (line.size() < 12 || line[8] != ' ') return error::http_parse_error;
    const auto version = parse_version(line.substr(0, 8));
    if (!version) return error::http_parse_error;
    unsigned status = 0;
    for (std::size_t i = 9; i < 12; ++i) {
        const char c = line[i];
        if (c < '0' || c > '9') return error::http_parse_error;
        status = status * 10 + static_cast<unsigned>(c - '0');
    }
    if (status < 100 || status > 599) return error::http_parse_error;
    std::string_view reason;
    if (line.size() > 12) {
        if (line[12] != ' ') return error::http_parse_error;
        reason = line.substr(13);
    }
    out.version = *version;
    out.status = status;
    out.reason.assign(reason);
    out.fields.clear();
    return parse_fields(rest, out.fields);
}

} // namespace detail

// ---- parsers ----

template <class Message>
http_feed_result basic_http_parser<Message>::feed(std::span<const std::uint8_t> bytes) {
    if (status_ != http_parse_status::need_more) return {0, status_, error_};
    auto r = reader_.feed(bytes);
    if (r.status == http_parse_status::complete) {
        if (auto ec = detail::parse_head(reader_.head(), message_)) {
            r.status = http_parse_status::failed;
            r.error = ec;
        }
    }
    status_ = r.status;
    error_ = r.error;
    return r;
}

template <class Message>
void basic_http_parser<Message>::reset() noexcept {
    reader_.reset();
    message_ = Message{};
    error_.clear();
    status_ = http_parse_status::need_more;
}

template class basic_http_parser<http_request>;
template class basic_http_parser<http_response>;

} // namespace corows
