// SPDX-License-Identifier: BSL-1.0
// permessage-deflate negotiation (RFC 7692 §5, §7.1) for both roles.
#pragma once

#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/extension.hpp>
#include <corows/protocol/frame.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <system_error>

namespace corows {

/// `bits` clamped to 8..15 (RFC 7692 §7.1.2): how every setting and stream takes a window size.
constexpr int clamp_window_bits(int bits) noexcept { return std::clamp(bits, 8, 15); }

/// What this side is willing to do; set by the user. Window bits are clamped to 8..15.
///
/// As a client: `server_no_context_takeover` and `server_max_window_bits` < 15 are requests
/// the server must grant (else the handshake fails); `client_no_context_takeover` and
/// `client_max_window_bits` < 15 are promises about our own compressor. The offer always
/// carries `client_max_window_bits` (we can honour any limit the server sets), so the default
/// offer is the universally accepted `permessage-deflate; client_max_window_bits`.
///
/// As a server: `server_*` settings are imposed on our own compressor whatever the client
/// asked; `client_no_context_takeover` is imposed on the client; `client_max_window_bits`
/// < 15 is imposed on the client too, and an offer that does not allow it (no
/// client_max_window_bits parameter) is declined, because the client would then use 15.
///
/// Window bits 8 is accepted in every position: our inflater works with 8, and our
/// compressor stays within 8 (see deflate_stream).
struct deflate_options {
    bool enabled = false; ///< offer (client) or accept (server) permessage-deflate
    bool server_no_context_takeover = false; ///< ask that the server reset its compressor after each message
    bool client_no_context_takeover = false; ///< ask that the client reset its compressor after each message
    int server_max_window_bits = 15; ///< the largest window the server may compress with (8-15)
    int client_max_window_bits = 15; ///< the largest window the client may compress with (8-15)
    /// zlib level of our compressor; see default_deflate_level for the measurement.
    int level = default_deflate_level;
    /// zlib memLevel of our compressor (1..9).
    int mem_level = default_deflate_mem_level;
    /// Messages shorter than this are sent uncompressed (decided before compressing; see
    /// deflate_stream). Measured on small JSON at level 3: without context takeover 16, 32
    /// and 64 bytes come out at 18, 34 and 62 bytes for 3-6 µs each; with takeover 32 bytes
    /// still shrink to 13. 64 is about where compressing stops costing bytes in both modes.
    std::size_t threshold = 64;
    /// Server only: impose server_no_context_takeover (RFC 7692 §7.1.1.1 lets a server
    /// always do so), so our messages come from the thread's shared compressor
    /// (detail::compress_shared()) and a connection holds no deflate state; the client's
    /// direction keeps whatever the other options give it. Clients ignore this.
    bool shared_compressor = true;
    /// Without context takeover, compress unfragmented messages with libdeflate when the
    /// build has it (about twice zlib's speed at the same level); zlib otherwise.
    bool use_libdeflate = true;
    /// Send libdeflate's final (BFINAL=1) block as it is (RFC 7692 §7.2.3.4) rather than
    /// rewriting it into the 00 00 FF FF flush form. Python websockets and Node ws inflate
    /// it; strict receivers that reject bytes after a final block do not. Off by default.
    bool final_block = false;
};

/// Named deflate_options, from most memory and best ratio to least; measured on 1 KiB JSON
/// (bench/deflate_bench, echo_server RSS growth over 1,000 connections): see each value.
enum class deflate_preset : std::uint8_t {
    /// The default of deflate_options{}: the server's direction without context takeover
    /// from the shared compressor (libdeflate), the client's direction with its full window.
    shared,
    /// No context takeover either way: both directions use the thread's shared streams, so
    /// a connection holds no compression state at all; 1 KiB JSON compresses less.
    no_context_takeover,
    /// Context takeover both ways within 2^11-byte windows, memLevel 3: a small per-
    /// connection state that still learns from earlier messages. The client's window is
    /// imposed, so offers without client_max_window_bits are declined.
    small_window,
    /// Context takeover both ways, full windows, memLevel 8: the best ratio, the most memory.
    full_context,
};

/// Enabled deflate_options for `preset` (see deflate_preset); adjust fields afterwards.
deflate_options deflate_preset_options(deflate_preset preset) noexcept;

/// The negotiated agreement, identical on both ends after a successful handshake.
struct deflate_params {
    bool server_no_context_takeover = false; ///< the server resets its compressor after each message
    bool client_no_context_takeover = false; ///< the client resets its compressor after each message
    int server_max_window_bits = 15; ///< the server compresses with at most this window (8-15)
    int client_max_window_bits = 15; ///< the client compresses with at most this window (8-15)

    friend bool operator==(const deflate_params&, const deflate_params&) = default;
};

/// The parameters of one permessage-deflate offer. `client_max_window_bits` is nullopt when
/// the parameter is absent; the bare parameter reads as 15 (same meaning as "=15") and 15 is
/// written bare.
struct deflate_offer_params {
    bool server_no_context_takeover = false; ///< the offer asks the server to reset its compressor after each message
    bool client_no_context_takeover = false; ///< the offer says the client will reset its compressor after each message
    std::optional<int> server_max_window_bits; ///< the server window the offer asks for, if any
    std::optional<int> client_max_window_bits; ///< the client window the offer allows (a bare parameter: 15), if any

    friend bool operator==(const deflate_offer_params&, const deflate_offer_params&) = default;
};

/// How one direction of the connection compresses: what a deflate_stream or inflate_stream
/// for that direction is constructed with.
struct deflate_direction {
    int window_bits = 15; ///< the LZ77 window, 2^bits bytes (8-15)
    bool no_context_takeover = false; ///< the stream is reset after each message

    friend bool operator==(const deflate_direction&, const deflate_direction&) = default;
};

/// The name of the extension, "permessage-deflate".
inline constexpr std::string_view permessage_deflate_name = "permessage-deflate";

/// Client: the offer `options` describes (client_max_window_bits always present).
deflate_offer_params client_offer(const deflate_options& options);

/// Writes an offer as a Sec-WebSocket-Extensions element ("permessage-deflate; ..."),
/// window bits clamped to 8..15.
std::string format_deflate_offer(const deflate_offer_params& offer);

/// Client: the Sec-WebSocket-Extensions value to send; empty if `options.enabled` is false.
std::string deflate_offer(const deflate_options& options);

/// Reads `ext` as a permessage-deflate offer; nullopt if it is another extension or has an
/// unknown, duplicated, value-less server_max_window_bits, valued *_no_context_takeover or
/// out-of-range (not 8..15 without leading zeros) parameter (RFC 7692 §5, §7.1). Extension
/// and parameter names match case-insensitively.
std::optional<deflate_offer_params> parse_deflate_offer(const extension& ext);

/// Server: picks the first acceptable permessage-deflate offer in `offers` (the parsed
/// request header; other extensions are ignored) under `options`. Returns the agreement and
/// sets `response_value` to the element for the response header; returns nullopt and
/// clears `response_value` when disabled or no offer is acceptable. Invalid offers are
/// declined, not fatal: RFC 7692 §5 asks the server to decline them and the connection can
/// proceed uncompressed.
std::optional<deflate_params> negotiate_deflate(std::span<const extension> offers,
                                                const deflate_options& options,
                                                std::string& response_value);

/// Client: checks the server's parsed Sec-WebSocket-Extensions against the offer made from
/// `offered` (see client_offer()). Sets `out` to the agreement, or nullopt if the server
/// declined. Returns error::bad_extension (the client must fail the connection) for an
/// extension that was not offered, a second permessage-deflate, an unknown, duplicated or
/// invalid parameter, client_max_window_bits when not offered, a missing
/// server_no_context_takeover or server_max_window_bits that was requested, or a
/// server_max_window_bits above the requested one.
std::error_code accept_deflate_response(std::span<const extension> response,
                                        const deflate_options& offered,
                                        std::optional<deflate_params>& out);

/// Client: as above, against an explicit offer (as produced by client_offer()).
std::error_code accept_deflate_response(std::span<const extension> response,
                                        const deflate_offer_params& offered,
                                        std::optional<deflate_params>& out);

/// What our compressor uses: the client_* parameters for a client, server_* for a server.
deflate_direction sending_direction(const deflate_params& params, role local) noexcept;

/// What our decompressor uses: the peer's sending direction.
deflate_direction receiving_direction(const deflate_params& params, role local) noexcept;

/// How one connection compresses and inflates: the agreement and this side's
/// deflate_options, combined once when the handshake completes.
struct deflate_config {
    deflate_direction receive;  ///< the peer's compressor, which our inflater follows
    deflate_direction send;     ///< our compressor
    int level = default_deflate_level; ///< zlib compression level of our compressor
    int mem_level = default_deflate_mem_level; ///< zlib memory level of our compressor
    std::size_t threshold = 0;  ///< messages shorter than this go out uncompressed
    bool use_libdeflate = true; ///< see deflate_options::use_libdeflate
    bool final_block = false;   ///< see deflate_options::final_block
};

/// The configuration of a connection in role `local` after agreeing on `agreed`, with
/// `mine` as this side's settings.
deflate_config make_deflate_config(const deflate_params& agreed, role local, const deflate_options& mine) noexcept;

} // namespace corows
