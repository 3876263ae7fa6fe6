// SPDX-License-Identifier: BSL-1.0
// Incremental, sans-I/O parsing of HTTP/1.1 message heads (RFC 9112), as much of HTTP as the
// WebSocket opening handshake and a small custom server need.
#pragma once

#include <corows/error.hpp>
#include <corows/protocol/query.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace corows {

/// One header field line; the parser stores the name as received and the value without OWS.
struct http_field {
    std::string name; ///< the field name as received
    std::string value; ///< the value without leading or trailing whitespace

    // Constructors rather than an aggregate: g++ 12 destroys twice the members of an
    // aggregate initialised inside a co_await expression; a constructed object is safe.
    /// An empty field.
    http_field() = default;
    /// The field `n: v`.
    http_field(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
};

/// Bounds on what a peer may make the parser buffer.
struct http_limits {
    std::size_t max_head_size = 8192; ///< bytes of the whole head, start line to blank line
    std::size_t max_fields = 64;      ///< field lines (an obs-fold continuation is not one)
    std::size_t max_body_size = 1024 * 1024; ///< bytes of a body websocket::read_body() takes
};

/// The header fields of a message, in arrival order. Names compare ASCII case-insensitively.
///
/// Repeated fields are kept as separate entries, because joining is only right for list-valued
/// fields (RFC 9110 §5.3): find() gives the first, joined() and list() see them all.
class http_fields {
public:
    /// Every field in arrival order.
    std::span<const http_field> all() const noexcept { return fields_; }
    /// Number of fields.
    std::size_t size() const noexcept { return fields_.size(); }
    /// True if there is no field.
    bool empty() const noexcept { return fields_.empty(); }

    /// Appends a field; throws std::invalid_argument if `name` is not a token or `value`
    /// holds CR, LF, NUL or another control byte (guards against header injection).
    void add(std::string_view name, std::string_view value);
    /// Replaces every field named `name` with one field (appended if there was none);
    /// throws like add().
    void set(std::string_view name, std::string_view value);
    /// Removes every field named `name` and returns how many there were.
    std::size_t erase(std::string_view name) noexcept;
    /// Removes every field.
    void clear() noexcept { fields_.clear(); }

    /// The value of the first field named `name`, or nullopt.
    std::optional<std::string_view> find(std::string_view name) const noexcept;
    /// The value of each field named `name`, in order; views into this object.
    std::vector<std::string_view> values(std::string_view name) const;
    /// How many fields are named `name`.
    std::size_t count(std::string_view name) const noexcept;
    /// Values of every field named `name` joined with ", " (RFC 9110 §5.3), or nullopt.
    std::optional<std::string> joined(std::string_view name) const;
    /// The elements of the comma-separated list formed by every field named `name`, trimmed
    /// of OWS, empty elements skipped (RFC 9110 §5.6.1); views into this object.
    std::vector<std::string_view> list(std::string_view name) const;
    /// True if list(name) holds `token`, compared case-insensitively (Connection, Upgrade).
    bool has_token(std::string_view name, std::string_view token) const noexcept;

private:
    std::vector<http_field> fields_;
};

/// An HTTP request head. `version` is major * 10 + minor: 11 for HTTP/1.1.
struct http_request {
    std::string method; ///< "GET", ...
    std::string target; ///< the request target: path and query (or the absolute form)
    unsigned version = 11; ///< 11 for HTTP/1.1
    http_fields fields; ///< the header fields, in order

    /// The path of the target (origin-form or absolute-form), without the query.
    std::string_view path() const noexcept;
    /// The query of the target, after '?' and without it; empty if there is none. Still
    /// percent-encoded: query_param() decodes it.
    std::string_view query() const noexcept;
    /// The first value of the query parameter `name`, percent-decoded ('+' as a space), or
    /// nullopt if the query has none; see corows::parse_query() for every parameter.
    std::optional<std::string> query_param(std::string_view name) const {
        return find_query_param(query(), name);
    }
    /// Every value of the query parameter `name`, in order (?tag=a&tag=b: "a", "b").
    std::vector<std::string> query_params(std::string_view name) const {
        return find_query_params(query(), name);
    }
    /// Shorthand for fields.find(name).
    std::optional<std::string_view> find(std::string_view name) const noexcept {
        return fields.find(name);
    }
    /// Shorthand for fields.has_token(name, token).
    bool has_token(std::string_view name, std::string_view token) const noexcept {
        return fields.has_token(name, token);
    }
    /// The head in wire form, ending with the blank line.
    std::string to_string() const;
};

/// An HTTP response head. `version` is major * 10 + minor: 11 for HTTP/1.1.
struct http_response {
    unsigned version = 11; ///< 11 for HTTP/1.1
    unsigned status = 200; ///< the status code
    std::string reason; ///< the reason phrase (may be empty)
    http_fields fields; ///< the header fields, in order
    /// The body: what websocket::write_response() sends after the head, or what a refused
    /// client handshake read (bounded). Not part of to_string().
    std::string body;

    /// Shorthand for fields.find(name).
    std::optional<std::string_view> find(std::string_view name) const noexcept {
        return fields.find(name);
    }
    /// Shorthand for fields.has_token(name, token).
    bool has_token(std::string_view name, std::string_view token) const noexcept {
        return fields.has_token(name, token);
    }
    /// The head in wire form, ending with the blank line.
    std::string to_string() const;
};

/// How a message says its body is delimited (RFC 9112 §6).
struct http_body_framing {
    bool transfer_encoding = false;  ///< a Transfer-Encoding field is present (chunked, ...)
    bool has_content_length = false; ///< a Content-Length field is present
    std::uint64_t content_length = 0; ///< its value, when has_content_length
};

/// Reads the body framing of `fields` into `out`: error::conflicting_length if both
/// Transfer-Encoding and Content-Length are present, error::bad_content_length if a
/// Content-Length is not a decimal number (a list of equal values is allowed) or values disagree.
std::error_code body_framing(const http_fields& fields, http_body_framing& out);

/// True if `fields` say the body is chunked and nothing else: Transfer-Encoding is exactly
/// "chunked" (other codings, e.g. gzip, are the application's to undo).
bool is_chunked_only(const http_fields& fields);

/// `res` in wire form, head then body. Adds Content-Length for the body unless the fields
/// already frame it (Content-Length or Transfer-Encoding) or the status has no body (1xx, 204,
/// 304); an empty reason becomes reason_phrase(status).
std::string build_response(const http_response& res);

/// The usual reason phrase of `status` ("Switching Protocols"), or "Unknown".
std::string_view reason_phrase(unsigned status) noexcept;

/// Where a parser stands.
enum class http_parse_status : std::uint8_t {
    need_more, ///< the blank line that ends the head has not arrived yet
    complete,  ///< the head is parsed; get() holds it
    failed,    ///< the head is malformed or over a limit; error() says why
};

/// Result of one feed() call.
struct http_feed_result {
    std::size_t consumed = 0; ///< bytes of the input that were part of the head (meaningless
                              ///< once failed: the connection is to be dropped)
    http_parse_status status = http_parse_status::need_more; ///< complete, need more input, or failed
    std::error_code error;    ///< set when status is failed
};

/// Incremental decoder of a chunked body (RFC 9112 §7.1): feed() consumes the bytes after the
/// head up to the end of the body and appends the chunk data; extensions and trailer fields
/// are skipped (at most max_overhead bytes of them in all).
class http_chunked_decoder {
public:
    /// A decoder that fails with error::body_too_large once the data would pass `max_body`.
    explicit http_chunked_decoder(std::size_t max_body, std::size_t max_overhead = 8192) noexcept
        : max_body_(max_body), max_overhead_(max_overhead) {}
    /// Consumes bytes of the chunked body, appending its data to `body`; complete after the
    /// last chunk and the trailer section; failed with error::bad_chunked_encoding or
    /// error::body_too_large (`body` then holds the data of the chunks before the bad one).
    http_feed_result feed(std::span<const std::uint8_t> bytes, std::string& body);
    /// Where the decoder stands.
    http_parse_status status() const noexcept { return status_; }

private:
    enum class state : std::uint8_t { size, ext, size_lf, data, data_cr, data_lf, trailer_start, trailer,
                                      trailer_lf, final_lf };
    std::size_t max_body_;
    std::size_t max_overhead_;
    std::size_t decoded_ = 0;
    std::size_t overhead_ = 0;
    std::uint64_t chunk_ = 0; ///< size being parsed, then data bytes left in the chunk
    bool digits_ = false;
    state state_ = state::size;
    http_parse_status status_ = http_parse_status::need_more;
};

namespace detail {

/// The part shared by both parsers: finds the end of the head, one byte at a time if need be,
/// without rescanning, enforcing the limits and rejecting control bytes as they arrive.
///
/// Line endings must be CRLF: a bare LF or a bare CR is an error (RFC 9112 §2.2 permits
/// either choice; rejecting them leaves no room for disagreement with a proxy in front).
/// Empty lines before the start line are skipped (RFC 9112 §2.2).
class http_head_reader {
public:
    explicit http_head_reader(http_limits limits) noexcept : limits_(limits) {}
    /// Consumes bytes up to the end of the head; complete means head() is whole.
    http_feed_result feed(std::span<const std::uint8_t> bytes);
    /// The head so far, from the start line up to and including the final CRLFCRLF.
    std::string_view head() const noexcept { return head_; }
    /// Forgets everything but the limits.
    void reset() noexcept;

private:
    enum class state : std::uint8_t { leading, leading_cr, line_start, in_line, cr, final_cr };
    http_limits limits_;
    std::string head_;
    std::size_t total_ = 0;  ///< bytes consumed, including skipped leading empty lines
    std::size_t lines_ = 0;  ///< field lines seen, obs-fold continuations excluded
    state state_ = state::leading;
};

/// Parses a whole head of the given kind (no limits: the reader applied them).
std::error_code parse_head(std::string_view head, http_request& out);
/// Parses a whole head of the given kind (no limits: the reader applied them).
std::error_code parse_head(std::string_view head, http_response& out);

} // namespace detail

/// Incremental parser of one message head; `Message` is http_request or http_response.
///
/// feed() takes whatever bytes arrived and consumes only those of the head: bytes after the
/// blank line (the first WebSocket frame, a body) are left to the caller. Feeding byte by
/// byte costs the same per byte as feeding everything at once.
template <class Message>
class basic_http_parser {
public:
    /// A parser enforcing `limits`.
    explicit basic_http_parser(http_limits limits = {}) noexcept : reader_(limits) {}

    /// Consumes bytes of the head; once complete or failed, consumes nothing more.
    http_feed_result feed(std::span<const std::uint8_t> bytes);
    /// Same as the byte overload, for text.
    http_feed_result feed(std::string_view text) {
        return feed(std::span<const std::uint8_t>(
            reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    }

    /// Where the parser stands.
    http_parse_status status() const noexcept { return status_; }
    /// Why it failed; empty unless status() is failed.
    std::error_code error() const noexcept { return error_; }
    /// The parsed message; meaningful once status() is complete.
    const Message& get() const noexcept { return message_; }
    /// The parsed message; meaningful once status() is complete.
    Message& get() noexcept { return message_; }
    /// Moves the parsed message out.
    Message release() noexcept { return std::move(message_); }
    /// Makes the parser ready for the next message (HTTP keep-alive), keeping the limits.
    void reset() noexcept;

private:
    detail::http_head_reader reader_;
    Message message_;
    std::error_code error_;
    http_parse_status status_ = http_parse_status::need_more;
};

extern template class basic_http_parser<http_request>;
extern template class basic_http_parser<http_response>;

/// Parser of a request head (the server side).
using http_request_parser = basic_http_parser<http_request>;
/// Parser of a response head (the client side).
using http_response_parser = basic_http_parser<http_response>;

} // namespace corows
