// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/http_body.hpp>

#include <algorithm>

namespace corows {

bool response_has_no_body(unsigned status, std::string_view method) noexcept {
    return status < 200 || status == 204 || status == 304 || method == "HEAD";
}

bool expects_continue(const http_request& req) noexcept {
    return req.version >= 11 && req.has_token("Expect", "100-continue");
}

http_body_decoder http_body_decoder::with_length(std::uint64_t length) noexcept {
    http_body_decoder d;
    d.remaining_ = length;
    return d;
}

http_body_decoder http_body_decoder::chunked(std::size_t max_body) noexcept {
    http_body_decoder d;
    d.kind_ = framing::chunked;
    d.chunks_ = http_chunked_decoder(max_body);
    return d;
}

http_body_decoder http_body_decoder::until_close(std::size_t max_keep) noexcept {
    http_body_decoder d;
    d.kind_ = framing::until_close;
    d.remaining_ = max_keep;
    return d;
}

http_parse_status http_body_decoder::status() const noexcept {
    if (kind_ == framing::chunked) return chunks_.status();
    return remaining_ == 0 ? http_parse_status::complete : http_parse_status::need_more;
}

http_feed_result http_body_decoder::feed(std::span<const std::uint8_t> bytes, std::string& body) {
    if (kind_ == framing::chunked) return chunks_.feed(bytes, body);
    http_feed_result r;
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
    body.append(reinterpret_cast<const char*>(bytes.data()), take);
    remaining_ -= take;
    r.consumed = take;
    r.status = status();
    return r;
}

std::error_code request_body_decoder(const http_request& req, std::size_t max_body, http_body_decoder& out) {
    http_body_framing f;
    if (auto ec = body_framing(req.fields, f)) return ec;
    if (f.transfer_encoding) {
        if (!is_chunked_only(req.fields)) return error::length_required;
        out = http_body_decoder::chunked(max_body);
        return {};
    }
    if (f.content_length > max_body) return error::body_too_large;
    out = http_body_decoder::with_length(f.content_length);
    return {};
}

http_body_decoder response_body_decoder(const http_response& res, std::string_view method, std::size_t max_keep) {
    if (response_has_no_body(res.status, method)) return {};
    http_body_framing f;
    if (body_framing(res.fields, f)) return http_body_decoder::until_close(max_keep);
    if (f.transfer_encoding) {
        if (is_chunked_only(res.fields)) return http_body_decoder::chunked(max_keep);
        return http_body_decoder::until_close(max_keep);
    }
    if (f.has_content_length) return http_body_decoder::with_length(std::min<std::uint64_t>(f.content_length, max_keep));
    return http_body_decoder::until_close(max_keep);
}

} // namespace corows
