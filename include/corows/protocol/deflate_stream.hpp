// SPDX-License-Identifier: BSL-1.0
// The send half of permessage-deflate (RFC 7692 §7.2.1): one raw-deflate stream that lives
// with the connection and compresses each message into a buffer it owns and reuses.
#pragma once

#include <corows/byte_buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <system_error>

namespace corows {

/// zlib level used when the user sets none: 3, the strongest of zlib's fast levels. Measured
/// on varied JSON with context takeover (CPU µs per deflate / compressed fraction):
///   1 KB: level 1 16.1/0.322, 3 16.3/0.296, 6 26.3/0.280, 9 46.0/0.272
///   4 KB: level 1 29.9/0.240, 3 38.0/0.214, 6 68.9/0.194, 9 152/0.184
///  16 KB: level 1 126/0.215,  3 148/0.188,  6 303/0.166,  9 623/0.156
/// Level 3 halves zlib's default (6) CPU cost for 6-13% more bytes; inflate costs the same.
inline constexpr int default_deflate_level = 3;
/// zlib memLevel used when the user sets none (zlib's own default).
inline constexpr int default_deflate_mem_level = 8;

/// A zlib raw-deflate stream, initialised once and kept for the life of the connection.
///
/// Each message ends with a Z_SYNC_FLUSH (never Z_FULL_FLUSH, which would discard the window
/// both ends share) and the trailing 00 00 FF FF is removed, as RFC 7692 §7.2.1 specifies.
/// With context takeover the window carries over to the next message; with
/// no_context_takeover the stream is reset (deflateReset, not re-created) after each one.
///
/// Contract: every byte given to compress()/compress_part() must go out as a compressed
/// message, because the peer's window only learns what it inflates. So decide *before*
/// calling (for example with the size threshold of deflate_options) whether a message is
/// sent compressed; never compress it and then send the original instead.
///
/// Window bits 8: zlib refuses a raw 256-byte window for deflate, so the stream compresses
/// with 9 bits. That still honours an agreed limit of 8: zlib's deflate never emits a match
/// distance above 2^bits - 262 (its MAX_DIST), here 250, which a 256-byte window covers.
/// The unit tests check this by inflating the output with an 8-bit window.
///
/// Moves keep the z_stream at its address (it lives on the heap), which zlib requires.
class deflate_stream {
public:
    /// Initialises a raw deflater: window_bits 8..15, level 0..9 or -1 (zlib's default),
    /// mem_level 1..9 (out-of-range values are clamped); throws std::bad_alloc if zlib cannot.
    explicit deflate_stream(int window_bits = 15, bool no_context_takeover = false,
                            int level = default_deflate_level,
                            int mem_level = default_deflate_mem_level);
    ~deflate_stream();
    /// Takes over `other`'s zlib stream; `other` may only be destroyed or assigned to.
    deflate_stream(deflate_stream&&) noexcept;
    /// Frees this zlib stream and takes over `other`'s.
    deflate_stream& operator=(deflate_stream&&) noexcept;
    deflate_stream(const deflate_stream&) = delete;
    deflate_stream& operator=(const deflate_stream&) = delete;

    /// Compresses a whole message read straight from `message`; returns the payload to send,
    /// which stays valid until the next call. On failure sets `ec` (error::deflate_failed)
    /// and returns an empty span; the stream must not be used further.
    std::span<const std::uint8_t> compress(std::span<const std::uint8_t> message,
                                           std::error_code& ec);

    /// Compresses one part of a message written in several frames; `fin` marks the last
    /// part. Returns the next frame's payload (may be empty before `fin`: zlib buffers input
    /// until it has a block), valid until the next call. Errors as compress().
    std::span<const std::uint8_t> compress_part(std::span<const std::uint8_t> part, bool fin,
                                                std::error_code& ec);

    /// Forgets the window and any partly compressed message, keeping the allocation.
    void reset() noexcept;

    /// The window size in bits the peer must accept (8..15, as constructed).
    int window_bits() const noexcept;
    /// True if the window is discarded after every message.
    bool no_context_takeover() const noexcept;
    /// Bytes currently reserved for output (for tests and memory accounting).
    std::size_t output_capacity() const noexcept;

    /// Output storage above this is released before the next message, so one huge message
    /// does not pin memory for the rest of the connection.
    static constexpr std::size_t max_retained_output = 1024 * 1024;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace corows
