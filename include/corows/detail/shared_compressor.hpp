// SPDX-License-Identifier: BSL-1.0
// The per-thread compressor of permessage-deflate messages sent without context takeover:
// such a message needs no state before or after it, so one compressor per thread (per
// setting) serves every connection on that thread, and a connection holds no deflate state.
#pragma once

#include <corows/protocol/deflate_stream.hpp>

#include <cstdint>
#include <span>
#include <system_error>

namespace corows::detail {

/// How a whole message is compressed without context takeover.
struct shared_deflate_settings {
    int window_bits = 15;                     ///< the negotiated window of our direction, 8..15
    /// zlib level; libdeflate gets 1 for zlib's 1..3 (as tight as zlib's 3 on JSON, faster),
    /// 6 for -1, the same number otherwise.
    int level = default_deflate_level;
    int mem_level = default_deflate_mem_level;///< zlib memLevel (libdeflate has none)
    /// Use libdeflate when this build has it and the message is no longer than the window
    /// (a match then never reaches further back than the window allows).
    bool use_libdeflate = true;
    /// Send libdeflate's output as it is, its last block with BFINAL set (RFC 7692 §7.2.3.4),
    /// instead of rewriting it into the 00 00 FF FF flush form (one extra inflate pass). Only
    /// for peers that start a new inflater per message (they agreed to no context takeover).
    bool final_block = false;
};

/// True if this build has the libdeflate fast path (meson option `libdeflate`).
bool libdeflate_available() noexcept;

/// Compresses `message` whole as one permessage-deflate payload that refers to nothing
/// before it, with this thread's shared compressor for `settings`. The result stays valid
/// until the next call on this thread. On failure sets `ec` (error::deflate_failed) and
/// returns an empty span. An empty message becomes the single 00 byte of RFC 7692 §7.2.3.6.
std::span<const std::uint8_t> compress_shared(std::span<const std::uint8_t> message,
                                              const shared_deflate_settings& settings,
                                              std::error_code& ec);

} // namespace corows::detail
