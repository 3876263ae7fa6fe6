// SPDX-License-Identifier: BSL-1.0
// Fuzzes the Sec-WebSocket-Extensions parser and permessage-deflate negotiation in both roles.
// Invariants: format(parse(x)) parses back to the same structure; every offer the server
// accepts yields a response the client accepts, with the same agreement on both ends; the
// agreement never exceeds what either side allowed.
#include <corows/error.hpp>
#include <corows/protocol/extension.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

corows::deflate_options config(int variant) {
    corows::deflate_options o;
    o.enabled = true;
    switch (variant) {
    case 1:
        o.server_no_context_takeover = o.client_no_context_takeover = true;
        o.server_max_window_bits = 8;
        o.client_max_window_bits = 8;
        break;
    case 2:
        o.server_max_window_bits = 11;
        o.client_max_window_bits = 12;
        break;
    default:
        break;
    }
    return o;
}

bool valid_bits(int b) { return b >= 8 && b <= 15; }

void server_then_client(const corows::extension& ext) {
    auto offer = corows::parse_deflate_offer(ext);
    for (int variant = 0; variant < 3; ++variant) {
        auto cfg = config(variant);
        std::string response;
        auto agreed = corows::negotiate_deflate(std::span(&ext, 1), cfg, response);
        if (!agreed) {
            check(response.empty());
            continue;
        }
        check(offer.has_value());
        check(valid_bits(agreed->server_max_window_bits) && valid_bits(agreed->client_max_window_bits));
        check(agreed->server_max_window_bits <= cfg.server_max_window_bits);
        check(agreed->server_max_window_bits <= offer->server_max_window_bits.value_or(15));
        check(agreed->client_max_window_bits <= offer->client_max_window_bits.value_or(15));
        check(agreed->server_no_context_takeover >= offer->server_no_context_takeover);

        std::vector<corows::extension> parsed_response;
        check(!corows::parse_extensions(response, parsed_response));
        std::optional<corows::deflate_params> at_client;
        check(!corows::accept_deflate_response(parsed_response, *offer, at_client));
        check(at_client.has_value() && *at_client == *agreed);
    }
}

void as_response(std::span<const corows::extension> exts) {
    for (int variant = 0; variant < 3; ++variant) {
        auto cfg = config(variant);
        std::optional<corows::deflate_params> out;
        auto ec = corows::accept_deflate_response(exts, cfg, out);
        if (ec) {
            check(ec == corows::error::bad_extension && !out);
            continue;
        }
        if (!out) {
            check(exts.empty());
            continue;
        }
        check(valid_bits(out->server_max_window_bits) && valid_bits(out->client_max_window_bits));
        check(out->server_max_window_bits <= cfg.server_max_window_bits);
        check(out->client_max_window_bits <= cfg.client_max_window_bits);
        check(out->server_no_context_takeover >= cfg.server_no_context_takeover);
        check(out->client_no_context_takeover >= cfg.client_no_context_takeover);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<corows::extension> exts;
    if (corows::parse_extensions(text, exts)) return 0;
    check(!exts.empty());

    std::string again = corows::format_extensions(exts);
    std::vector<corows::extension> reparsed;
    check(!corows::parse_extensions(again, reparsed));
    check(reparsed == exts);

    for (const auto& e : exts) server_then_client(e);
    std::string response;
    auto whole = corows::negotiate_deflate(exts, config(0), response);
    check(whole.has_value() == !response.empty());
    as_response(exts);
    return 0;
}
