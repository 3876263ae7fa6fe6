// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/handshake.hpp>

#include <corows/detail/ascii.hpp>
#include <corows/detail/base64.hpp>
#include <corows/detail/platform.hpp>
#include <corows/detail/sha1.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <random>
#include <stdexcept>

namespace corows {
namespace {

// RFC 6455 §9.1 lets Sec-WebSocket-Extensions repeat; every occurrence counts.
std::error_code collect_extensions(const http_fields& fields, std::vector<extension>& out) {
    for (auto value : fields.values("Sec-WebSocket-Extensions"))
        if (parse_extensions(value, out)) return error::bad_extension;
    return {};
}

// A single-instance field (RFC 6455 §11.3): exactly one occurrence, or nullopt.
std::optional<std::string_view> find_single(const http_fields& fields, std::string_view name) {
    if (fields.count(name) != 1) return std::nullopt;
    return fields.find(name);
}

std::string decimal(std::size_t n) {
    std::array<char, 24> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), n);
    return std::string(buf.data(), r.ptr);
}

} // namespace

std::string accept_key(std::string_view key) {
    std::string input;
    input.reserve(key.size() + websocket_guid.size());
    input += key;
    input += websocket_guid;
    const auto digest = detail::sha1(std::span<const std::uint8_t>(
        reinterpret_cast<const std::uint8_t*>(input.data()), input.size()));
    return detail::base64_encode(digest);
}

// ---- server side ----

bool is_upgrade(const http_request& req) noexcept {
    return req.has_token("Upgrade", "websocket");
}

std::error_code validate_upgrade_request(const http_request& req, upgrade_request& out) {
    // Methods are case-sensitive (RFC 9110 §9.1).
    if (req.method != "GET") return error::bad_method;
    if (req.version < 11) return error::bad_http_version;
    // HTTP/2 and later upgrade differently (RFC 8441), and a version we do not know is one
    // whose framing we cannot trust: 505 (RFC 9110 §15.6.6).
    if (req.version > 11) return error::http_version_not_supported;
    // The bytes after the head become WebSocket frames: a body there would be read as frames
    // by us and as a body by a proxy in front, which is how requests get smuggled.
    http_body_framing framing;
    if (auto ec = body_framing(req.fields, framing)) return ec;
    if (framing.transfer_encoding || framing.content_length > 0) return error::upgrade_with_body;
    // RFC 9112 §3.2: no Host, or more than one, is a 400.
    const auto host = find_single(req.fields, "Host");
    if (!host) return error::missing_host;
    if (!req.has_token("Upgrade", "websocket")) return error::bad_upgrade;
    if (!req.has_token("Connection", "upgrade")) return error::bad_connection;
    // Checked before the key so that a client speaking an older draft learns, through the 426,
    // which version to retry with.
    const auto version = find_single(req.fields, "Sec-WebSocket-Version");
    if (!version || *version != "13") return error::bad_version;
    const auto key = find_single(req.fields, "Sec-WebSocket-Key");
    if (!key) return error::bad_key;
    const auto nonce = detail::base64_decode(*key);
    if (!nonce || nonce->size() != 16) return error::bad_key;

    upgrade_request r;
    for (auto p : req.fields.list("Sec-WebSocket-Protocol")) {
        if (!detail::is_token(p)) return error::http_parse_error;
        r.subprotocols.emplace_back(p);
    }
    if (auto ec = collect_extensions(req.fields, r.extensions)) return ec;
    r.host.assign(*host);
    if (auto origin = req.find("Origin")) r.origin.emplace(*origin);
    r.key.assign(*key);
    r.request = req;
    out = std::move(r);
    return {};
}

std::string choose_subprotocol(std::span<const std::string> ours, std::span<const std::string> offered) {
    for (const auto& mine : ours)
        if (std::find(offered.begin(), offered.end(), mine) != offered.end()) return mine;
    return {};
}

bool looks_like_tls_record(std::span<const std::uint8_t> head) noexcept {
    // Content type 21 (alert) or 22 (handshake), then a record version 3.x.
    return head.size() >= 3 && (head[0] == 0x15 || head[0] == 0x16) && head[1] == 0x03 && head[2] <= 0x04;
}

std::string_view busy_response(unsigned status) noexcept {
    // Constants, not build_refusal_response(): an overloaded server should not allocate to say so.
    if (status == 429)
        return "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    return "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

unsigned http_status_for(std::error_code ec) noexcept {
    if (ec.category() != error_category()) return 500;
    switch (static_cast<error>(ec.value())) {
    case error::bad_method: return 405;
    case error::bad_version: return 426;
    case error::header_too_large:
    case error::too_many_headers: return 431;
    case error::timeout: return 408;
    case error::body_too_large: return 413;
    case error::length_required: return 411;
    case error::http_version_not_supported: return 505;
    default: return 400;
    }
}

std::string build_accept_response(const upgrade_request& req, const accept_options& options) {
    http_response res;
    res.status = 101;
    res.reason = reason_phrase(101);
    res.fields.add("Upgrade", "websocket");
    res.fields.add("Connection", "Upgrade");
    res.fields.add("Sec-WebSocket-Accept", accept_key(req.key));
    if (!options.subprotocol.empty()) {
        if (std::find(req.subprotocols.begin(), req.subprotocols.end(), options.subprotocol) ==
            req.subprotocols.end())
            throw std::invalid_argument("corows: the chosen subprotocol was not offered");
        res.fields.add("Sec-WebSocket-Protocol", options.subprotocol);
    }
    if (!options.extensions.empty())
        res.fields.add("Sec-WebSocket-Extensions", options.extensions);
    for (const auto& f : options.extra_fields) res.fields.add(f.name, f.value);
    return res.to_string();
}

std::string build_refusal_response(unsigned status, std::string_view body,
                                   std::span<const http_field> extra_fields) {
    http_response res;
    res.status = status;
    res.reason = reason_phrase(status);
    if (status == 426) {
        // RFC 9110 §15.5.22 wants Upgrade in a 426, and §7.8 wants it named in Connection.
        res.fields.add("Upgrade", "websocket");
        res.fields.add("Sec-WebSocket-Version", "13");
    }
    if (status == 405) res.fields.add("Allow", "GET");
    for (const auto& f : extra_fields) res.fields.add(f.name, f.value);
    if (!body.empty()) res.fields.add("Content-Type", "text/plain; charset=utf-8");
    res.fields.add("Content-Length", decimal(body.size()));
    // The connection is not worth keeping: the client came to upgrade it, and any body it sent
    // after the head is unread.
    res.fields.add("Connection", status == 426 ? "Upgrade, close" : "close");
    auto out = res.to_string();
    out += body;
    return out;
}

std::string build_refusal_response(std::error_code ec) {
    return build_refusal_response(http_status_for(ec), ec.message());
}

// ---- client side ----

std::string generate_key() {
    // random_device reads the OS entropy source (getrandom or /dev/urandom, or RDRAND) in
    // libstdc++ and libc++ on Linux; four draws per connection are cheap next to a TCP connect.
    auto& device = detail::per_thread<std::random_device, struct key_entropy>();
    std::array<std::uint8_t, 16> nonce{};
    for (std::size_t i = 0; i < nonce.size(); i += 4) {
        const auto word = static_cast<std::uint32_t>(device());
        for (std::size_t b = 0; b < 4; ++b) nonce[i + b] = static_cast<std::uint8_t>(word >> (8 * b));
    }
    return detail::base64_encode(nonce);
}

std::string build_upgrade_request(const upgrade_offer& offer) {
    http_request req;
    req.method = "GET";
    // The target goes on the request line unchecked by add(): refuse what would break it.
    if (offer.target.empty() ||
        std::any_of(offer.target.begin(), offer.target.end(), [](char ch) {
            const auto c = static_cast<unsigned char>(ch);
            return c <= ' ' || c >= 0x7F;
        }))
        throw std::invalid_argument("corows: request target holds a space or a control byte");
    req.target = offer.target;
    req.fields.add("Host", offer.host);
    req.fields.add("Upgrade", "websocket");
    req.fields.add("Connection", "Upgrade");
    req.fields.add("Sec-WebSocket-Key", offer.key);
    // The order of RFC 6455 §1.2's example, so that its text can be compared byte for byte.
    if (!offer.origin.empty()) req.fields.add("Origin", offer.origin);
    if (!offer.subprotocols.empty()) {
        std::string list;
        for (const auto& p : offer.subprotocols) {
            if (!detail::is_token(p))
                throw std::invalid_argument("corows: a subprotocol is not a token");
            if (!list.empty()) list += ", ";
            list += p;
        }
        req.fields.add("Sec-WebSocket-Protocol", list);
    }
    if (!offer.extensions.empty()) req.fields.add("Sec-WebSocket-Extensions", offer.extensions);
    req.fields.add("Sec-WebSocket-Version", "13");
    for (const auto& f : offer.extra_fields) req.fields.add(f.name, f.value);
    return req.to_string();
}

std::error_code validate_upgrade_response(const http_response& res, const upgrade_offer& offer,
                                          upgrade_response& out) {
    if (res.status != 101) return error::bad_status;
    if (res.version < 11) return error::bad_http_version;
    if (!res.has_token("Upgrade", "websocket")) return error::bad_upgrade;
    if (!res.has_token("Connection", "upgrade")) return error::bad_connection;
    const auto accept = find_single(res.fields, "Sec-WebSocket-Accept");
    if (!accept || *accept != accept_key(offer.key)) return error::bad_accept;

    upgrade_response r;
    if (res.fields.count("Sec-WebSocket-Protocol") != 0) {
        // RFC 6455 §4.1: one value, and one the client sent.
        const auto chosen = res.fields.list("Sec-WebSocket-Protocol");
        if (chosen.size() != 1 ||
            std::find(offer.subprotocols.begin(), offer.subprotocols.end(), chosen.front()) ==
                offer.subprotocols.end())
            return error::bad_subprotocol;
        r.subprotocol.assign(chosen.front());
    }
    if (auto ec = collect_extensions(res.fields, r.extensions)) return ec;
    r.response = res;
    out = std::move(r);
    return {};
}

} // namespace corows
