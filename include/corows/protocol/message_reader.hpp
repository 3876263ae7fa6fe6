// SPDX-License-Identifier: BSL-1.0
// The receive side of a connection, sans I/O: frames in, messages and control events out.
#pragma once

#include <corows/error.hpp>
#include <corows/message.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/inflate_stream.hpp>
#include <corows/protocol/permessage_deflate.hpp>
#include <corows/protocol/utf8.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace corows {

/// What message_reader::read() found.
enum class read_event : std::uint8_t {
    need_more, ///< every byte was consumed or is an incomplete frame: read more from the peer
    progress,  ///< a fragment (or a step of a compressed frame) was consumed: call read() again
    message,   ///< a complete data message is in the `message&` passed in
    ping,      ///< a ping arrived; `payload` must be echoed in a pong
    pong,      ///< a pong arrived
    close,     ///< a valid close frame arrived; see `code` and `reason`
    failed,    ///< protocol violation; answer with close_code_for(ec) and stop reading
};

/// One result of message_reader::read(). Spans point into the buffer passed to read().
struct read_result {
    read_event event = read_event::need_more; ///< what the read found
    /// For `progress`: a frame (a non-final fragment) was consumed to its end. Every
    /// message, ping, pong and close event ends a frame too.
    bool frame_ended = false;
    std::span<const std::uint8_t> payload; ///< ping/pong/close frame payload
    std::uint16_t code = 0;                ///< close code (1005 when the frame had none)
    std::string_view reason;               ///< close reason (valid UTF-8)
    std::error_code ec;                    ///< the violation, for `failed`
};

/// Limits and negotiated state for the receive side of one connection.
struct reader_config {
    role local = role::server;                         ///< decides which frames must be masked
    std::size_t max_message_size = 16 * 1024 * 1024;   ///< after decompression
};

/// Assembles messages from frames decoded by position out of a receive buffer. Unmasks in
/// place, validates UTF-8 as bytes arrive, inflates compressed messages, and consumes partial
/// frames so the caller's buffer never has to hold more than one read's worth of a large frame.
class message_reader {
public:
    /// A reader for `cfg`; permessage-deflate stays off until enable_deflate().
    explicit message_reader(const reader_config& cfg) noexcept;

    /// Accepts RSV1 messages from now on, inflating as the peer compresses (`peer`). With
    /// context takeover the reader's own inflater is created at the first compressed message
    /// and kept. Without, a message whose compressed bytes all arrive in one read() goes
    /// through the thread's shared inflater (see detail::inflate_shared()); one that spans
    /// reads gets its own inflater for that message only.
    void enable_deflate(const deflate_direction& peer) noexcept;

    /// Compressed payload inflated per read() call at most, so that the caller can stop
    /// between steps (a frame may be megabytes of blocks that inflate to nothing).
    static constexpr std::size_t inflate_step = 64 * 1024;

    /// Consumes bytes from `buffer[pos...]`, advancing `pos`, until one event is complete, a
    /// non-final data frame was consumed, or inflate_step compressed bytes were (progress).
    /// A `message` event may borrow `buffer` (see message::borrowed()); payload spans of
    /// control events point into `buffer`. After `failed`, the reader must not be used again.
    read_result read(std::span<std::uint8_t> buffer, std::size_t& pos, message& out);

    /// True while a fragmented message is partly received.
    bool in_message() const noexcept { return in_message_; }

    /// True while this reader holds its own inflater (see enable_deflate()).
    bool inflater_allocated() const noexcept { return inflater_.has_value(); }

private:
    std::error_code begin_data_frame(const frame_header& h, message& out);
    std::error_code consume_payload(std::span<std::uint8_t> chunk, message& out);
    std::error_code finish_message(message& out);
    read_result end_of_frame(message& out);
    read_result control_event(const frame_header& h, std::span<std::uint8_t> payload);

    frame_rules rules_;
    std::size_t max_message_size_;
    std::optional<inflate_stream> inflater_;
    utf8_validator utf8_;
    frame_header frame_;            // the data frame whose payload is being consumed
    std::uint64_t remaining_ = 0;   // payload bytes of frame_ not consumed yet
    std::uint64_t mask_offset_ = 0; // payload bytes of frame_ unmasked so far
    std::uint64_t message_size_ = 0;// payload bytes of the current message on the wire
    int inflate_window_bits_ = 15;
    bool inflate_no_context_takeover_ = false;
    bool in_frame_ = false;
    bool in_message_ = false;
    bool compressed_ = false;
    message_kind kind_ = message_kind::text;
};

} // namespace corows
