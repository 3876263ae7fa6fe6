// SPDX-License-Identifier: BSL-1.0
// The receive half of permessage-deflate (RFC 7692 §7.2.2): one raw-inflate stream that
// lives with the connection and inflates each compressed message as its frames arrive.
#pragma once

#include <corows/byte_buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <system_error>

namespace corows {

/// A zlib raw-inflate stream, initialised once and kept for the life of the connection.
///
/// Use per message: write() each frame's payload as it arrives, then finish() once. With
/// context takeover the window carries over to the next message; with no_context_takeover
/// the stream is reset (not re-created) after each message.
///
/// `limit` bounds out.size() (the whole buffer, not just what one call adds): the moment
/// inflating would take it past `limit`, the call stops with error::message_too_big, having
/// produced at most one byte more than allowed, and without growing the buffer's capacity
/// past max(256, 2 * limit) (byte_buffer doubles). A bomb is never inflated into memory.
///
/// Tolerated beyond RFC 7692's flush form: DEFLATE blocks with BFINAL set (§7.2.3.4), after
/// which the data continues as a new stream with the same window; a message that ends right
/// after such a block, or an empty payload, takes no 00 00 FF FF tail.
///
/// After any error the stream's state is unspecified: the connection must fail (it would
/// anyway: 1002 or 1009). Only destruction, assignment and reset() remain valid.
/// Moves keep the z_stream at its address (it lives on the heap), which zlib requires.
class inflate_stream {
public:
    /// Initialises a raw inflater for a peer compressing with at most 2^window_bits of
    /// window (8..15; values outside are clamped); throws std::bad_alloc if zlib cannot.
    explicit inflate_stream(int window_bits = 15, bool no_context_takeover = false);
    ~inflate_stream();
    /// Takes over `other`'s zlib stream; `other` may only be destroyed or assigned to.
    inflate_stream(inflate_stream&&) noexcept;
    /// Frees this zlib stream and takes over `other`'s.
    inflate_stream& operator=(inflate_stream&&) noexcept;
    inflate_stream(const inflate_stream&) = delete;
    inflate_stream& operator=(const inflate_stream&) = delete;

    /// Inflates one frame's compressed payload, appending the output to `out` (written in
    /// place through out.prepare()); error::message_too_big if out.size() would exceed
    /// `limit`, error::inflate_failed on invalid data.
    std::error_code write(std::span<const std::uint8_t> fragment, byte_buffer& out,
                          std::size_t limit);

    /// Ends the message: inflates the implied 00 00 FF FF tail, checks the data ended on a
    /// block boundary (else error::inflate_failed), and resets the window if this direction
    /// has no context takeover. Same `out`/`limit` contract as write().
    std::error_code finish(byte_buffer& out, std::size_t limit);

    /// Forgets the window and any partly inflated message, keeping the allocation.
    void reset() noexcept;

    /// The window size in bits this stream accepts.
    int window_bits() const noexcept;
    /// True if the window is discarded after every message.
    bool no_context_takeover() const noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace corows
