// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/ascii.hpp>
#include <corows/error.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <algorithm>

namespace corows {
namespace {

using detail::iequals;

// RFC 7692 §7.1.2: a decimal integer 8..15 without leading zeroes.
std::optional<int> parse_window_bits(std::string_view v) noexcept {
    if (v.size() == 1 && v[0] >= '8' && v[0] <= '9') return v[0] - '0';
    if (v.size() == 2 && v[0] == '1' && v[1] >= '0' && v[1] <= '5') return 10 + (v[1] - '0');
    return std::nullopt;
}

// Appends "; name=bits" (bits clamped to 8..15); with `bare_15`, 15 is the bare name.
void append_param(std::string& s, std::string_view name, int bits, bool bare_15 = false) {
    bits = clamp_window_bits(bits);
    s += "; ";
    s += name;
    if (bare_15 && bits == 15) return;
    s += '=';
    if (bits >= 10) s += '1';
    s += static_cast<char>('0' + bits % 10);
}

enum class side { offer, response };

// The parameters of one permessage-deflate element, checked against the grammar of an offer
// or a response. client_max_window_bits: a response needs a value, an offer may omit it.
std::optional<deflate_offer_params> parse_params(const extension& ext, side s) {
    deflate_offer_params p;
    bool seen[4] = {false, false, false, false};
    for (const auto& param : ext.params) {
        int which;
        if (iequals(param.name, "server_no_context_takeover")) which = 0;
        else if (iequals(param.name, "client_no_context_takeover")) which = 1;
        else if (iequals(param.name, "server_max_window_bits")) which = 2;
        else if (iequals(param.name, "client_max_window_bits")) which = 3;
        else return std::nullopt;
        if (seen[which]) return std::nullopt;
        seen[which] = true;
        switch (which) {
        case 0:
        case 1:
            if (param.value) return std::nullopt;
            (which == 0 ? p.server_no_context_takeover : p.client_no_context_takeover) = true;
            break;
        case 2:
        case 3: {
            if (!param.value) {
                if (which == 2 || s == side::response) return std::nullopt;
                p.client_max_window_bits = 15;
                break;
            }
            auto bits = parse_window_bits(*param.value);
            if (!bits) return std::nullopt;
            (which == 2 ? p.server_max_window_bits : p.client_max_window_bits) = *bits;
            break;
        }
        }
    }
    return p;
}

} // namespace

deflate_offer_params client_offer(const deflate_options& options) {
    deflate_offer_params o;
    o.server_no_context_takeover = options.server_no_context_takeover;
    o.client_no_context_takeover = options.client_no_context_takeover;
    // Asking for 15 is asking for nothing, and some servers refuse the unasked parameter.
    if (clamp_window_bits(options.server_max_window_bits) < 15)
        o.server_max_window_bits = clamp_window_bits(options.server_max_window_bits);
    o.client_max_window_bits = clamp_window_bits(options.client_max_window_bits);
    return o;
}

std::string format_deflate_offer(const deflate_offer_params& offer) {
    std::string s(permessage_deflate_name);
    if (offer.server_no_context_takeover) s += "; server_no_context_takeover";
    if (offer.client_no_context_takeover) s += "; client_no_context_takeover";
    if (offer.server_max_window_bits)
        append_param(s, "server_max_window_bits", *offer.server_max_window_bits);
    if (offer.client_max_window_bits)
        append_param(s, "client_max_window_bits", *offer.client_max_window_bits, true);
    return s;
}

std::string deflate_offer(const deflate_options& options) {
    if (!options.enabled) return {};
    return format_deflate_offer(client_offer(options));
}

std::optional<deflate_offer_params> parse_deflate_offer(const extension& ext) {
    if (!iequals(ext.name, permessage_deflate_name)) return std::nullopt;
    return parse_params(ext, side::offer);
}

std::optional<deflate_params> negotiate_deflate(std::span<const extension> offers,
                                                const deflate_options& options,
                                                std::string& response_value) {
    response_value.clear();
    if (!options.enabled) return std::nullopt;
    const int server_limit = clamp_window_bits(options.server_max_window_bits);
    const int client_limit = clamp_window_bits(options.client_max_window_bits);
    for (const auto& ext : offers) {
        auto offer = parse_deflate_offer(ext);
        if (!offer) continue;
        // Without the parameter the client cannot be told a smaller window: it will use 15.
        if (!offer->client_max_window_bits && client_limit < 15) continue;

        deflate_params p;
        p.server_no_context_takeover = offer->server_no_context_takeover ||
                                       options.server_no_context_takeover ||
                                       options.shared_compressor;
        p.client_no_context_takeover =
            offer->client_no_context_takeover || options.client_no_context_takeover;
        p.server_max_window_bits = std::min(offer->server_max_window_bits.value_or(15), server_limit);
        p.client_max_window_bits = std::min(offer->client_max_window_bits.value_or(15), client_limit);

        // Echo client_no_context_takeover even when only hinted, so both ends hold the same
        // agreement; answer server_max_window_bits whenever asked (§7.1.2.1 requires it).
        response_value.assign(permessage_deflate_name);
        if (p.server_no_context_takeover) response_value += "; server_no_context_takeover";
        if (p.client_no_context_takeover) response_value += "; client_no_context_takeover";
        if (offer->server_max_window_bits || p.server_max_window_bits < 15)
            append_param(response_value, "server_max_window_bits", p.server_max_window_bits);
        if (p.client_max_window_bits < 15)
            append_param(response_value, "client_max_window_bits", p.client_max_window_bits);
        return p;
    }
    return std::nullopt;
}

std::error_code accept_deflate_response(std::span<const extension> response,
                                        const deflate_options& offered,
                                        std::optional<deflate_params>& out) {
    if (!offered.enabled) {
        out.reset();
        return response.empty() ? std::error_code{} : make_error_code(error::bad_extension);
    }
    return accept_deflate_response(response, client_offer(offered), out);
}

std::error_code accept_deflate_response(std::span<const extension> response,
                                        const deflate_offer_params& offered,
                                        std::optional<deflate_params>& out) {
    out.reset();
    std::optional<deflate_params> agreed;
    for (const auto& ext : response) {
        // We offered permessage-deflate once; the server may accept it at most once.
        if (!iequals(ext.name, permessage_deflate_name) || agreed) return error::bad_extension;
        auto r = parse_params(ext, side::response);
        if (!r) return error::bad_extension;
        if (offered.server_no_context_takeover && !r->server_no_context_takeover)
            return error::bad_extension;
        if (offered.server_max_window_bits &&
            (!r->server_max_window_bits ||
             *r->server_max_window_bits > *offered.server_max_window_bits))
            return error::bad_extension;
        if (r->client_max_window_bits && !offered.client_max_window_bits)
            return error::bad_extension;

        deflate_params p;
        p.server_no_context_takeover = r->server_no_context_takeover;
        // Offering client_no_context_takeover was a promise (§7.1.1.2): keep it either way.
        p.client_no_context_takeover =
            r->client_no_context_takeover || offered.client_no_context_takeover;
        p.server_max_window_bits = r->server_max_window_bits.value_or(15);
        // An offered value is also a promise (§7.1.2.2): a larger answer does not lift it.
        p.client_max_window_bits = std::min(r->client_max_window_bits.value_or(15),
                                            offered.client_max_window_bits.value_or(15));
        agreed = p;
    }
    out = agreed;
    return {};
}

deflate_options deflate_preset_options(deflate_preset preset) noexcept {
    deflate_options o;
    o.enabled = true;
    switch (preset) {
    case deflate_preset::shared:
        break;
    case deflate_preset::no_context_takeover:
        o.server_no_context_takeover = true;
        o.client_no_context_takeover = true;
        break;
    case deflate_preset::small_window:
        o.shared_compressor = false;
        o.server_max_window_bits = 11;
        o.client_max_window_bits = 11;
        o.mem_level = 3;
        break;
    case deflate_preset::full_context:
        o.shared_compressor = false;
        break;
    }
    return o;
}

deflate_direction sending_direction(const deflate_params& params, role local) noexcept {
    if (local == role::client)
        return {params.client_max_window_bits, params.client_no_context_takeover};
    return {params.server_max_window_bits, params.server_no_context_takeover};
}

deflate_direction receiving_direction(const deflate_params& params, role local) noexcept {
    return sending_direction(params, local == role::client ? role::server : role::client);
}

deflate_config make_deflate_config(const deflate_params& agreed, role local, const deflate_options& mine) noexcept {
    deflate_config c;
    c.receive = receiving_direction(agreed, local);
    c.send = sending_direction(agreed, local);
    c.level = mine.level;
    c.mem_level = mine.mem_level;
    c.threshold = mine.threshold;
    c.use_libdeflate = mine.use_libdeflate;
    c.final_block = mine.final_block;
    return c;
}

} // namespace corows
