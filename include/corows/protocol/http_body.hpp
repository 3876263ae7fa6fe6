// SPDX-License-Identifier: BSL-1.0
// Sans-I/O decoding of an HTTP/1.1 message body (RFC 9112 §6): which framing a message has,
// and a decoder that takes bytes as they arrive, by Content-Length, by the chunked coding, or
// up to the end of the connection.
#pragma once

#include <corows/protocol/http.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace corows {

/// True if a response with `status` to a `method` request has no body whatever its fields say
/// (RFC 9112 §6.3): 1xx, 204, 304, and any answer to HEAD.
bool response_has_no_body(unsigned status, std::string_view method = {}) noexcept;

/// True if `req` waits for an interim 100 (Continue) before it sends its body (RFC 9110
/// §10.1.1): HTTP/1.1 or later with the token 100-continue in Expect.
bool expects_continue(const http_request& req) noexcept;

/// The interim response that lets a client waiting on Expect: 100-continue send its body.
inline constexpr std::string_view continue_response = "HTTP/1.1 100 Continue\r\n\r\n";

/// Incremental decoder of one message body. feed() takes the bytes after the head as they
/// arrive, appends the body's data, and consumes nothing past the body's end: bytes beyond it
/// (the next request) are left to the caller. A default-constructed decoder is of an empty
/// body, complete at once.
class http_body_decoder {
public:
    /// How the decoder finds the body's end.
    enum class framing : std::uint8_t {
        length,      ///< after a fixed number of bytes (Content-Length)
        chunked,     ///< after the last chunk and the trailer section (RFC 9112 §7.1)
        until_close, ///< when the connection ends; the decoder keeps a bounded prefix
    };

    /// A decoder of an empty body.
    http_body_decoder() noexcept = default;
    /// A decoder of a body of exactly `length` bytes.
    static http_body_decoder with_length(std::uint64_t length) noexcept;
    /// A decoder of a chunked body whose data fails with error::body_too_large past `max_body`
    /// bytes and with error::bad_chunked_encoding if malformed (see http_chunked_decoder).
    static http_body_decoder chunked(std::size_t max_body) noexcept;
    /// A decoder of a body that ends with the connection: it takes up to `max_keep` bytes and
    /// is complete once it has them; before that the caller decides when the input has ended.
    static http_body_decoder until_close(std::size_t max_keep) noexcept;

    /// Consumes bytes of the body, appending its data to `body`; complete once the body is
    /// whole, failed (chunked only) with the error; once either, consumes nothing more.
    http_feed_result feed(std::span<const std::uint8_t> bytes, std::string& body);
    /// Same as the byte overload, for text.
    http_feed_result feed(std::string_view text, std::string& body) {
        return feed(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    body);
    }

    /// Where the decoder stands.
    http_parse_status status() const noexcept;
    /// How it finds the body's end.
    framing kind() const noexcept { return kind_; }
    /// Bytes still to come of a length-framed (or until_close) body; 0 for a chunked one.
    std::uint64_t remaining() const noexcept { return kind_ == framing::chunked ? 0 : remaining_; }

private:
    framing kind_ = framing::length;
    std::uint64_t remaining_ = 0;
    http_chunked_decoder chunks_{0};
};

/// Sets `out` to the decoder of `req`'s body of at most `max_body` bytes: by its Content-Length,
/// chunked, or empty without either. Fails like body_framing() (error::conflicting_length,
/// error::bad_content_length), with error::length_required for a Transfer-Encoding other than
/// exactly chunked (its other codings are the application's to undo), and with
/// error::body_too_large for a Content-Length over `max_body`.
std::error_code request_body_decoder(const http_request& req, std::size_t max_body, http_body_decoder& out);

/// The decoder of at most `max_keep` bytes of the body of `res`, the answer to a `method`
/// request: empty if response_has_no_body(), by its Content-Length (cut to `max_keep`), chunked
/// (failing past `max_keep`), else up to the end of the connection, also when the framing is
/// malformed or another coding: a response's body is read to inform, never to go on after it.
http_body_decoder response_body_decoder(const http_response& res, std::string_view method, std::size_t max_keep);

} // namespace corows
