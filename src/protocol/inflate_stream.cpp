// SPDX-License-Identifier: BSL-1.0
#include <corows/error.hpp>
#include <corows/protocol/inflate_stream.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <new>

namespace corows {
namespace {

// The empty non-final stored block's LEN/NLEN that the sender stripped (RFC 7692 §7.2.1).
constexpr std::array<std::uint8_t, 4> flush_tail{0x00, 0x00, 0xff, 0xff};

// Output space asked of the buffer per zlib call when it has little spare room: four times
// the input (JSON inflates about 3-6x), at least enough that a small message takes one call,
// at most a bound so a large frame does not reserve memory on a guess; byte_buffer doubles
// its capacity when more is needed.
constexpr std::size_t min_output_step = 4096;
constexpr std::size_t max_output_step = 1024 * 1024;

} // namespace

struct inflate_stream::impl {
    z_stream zs{};
    int window_bits = 15;
    bool no_context_takeover = false;
    bool got_input = false;       // a byte of the current message has been written
    bool after_final = false;     // a BFINAL block ended and nothing followed it yet

    impl(int bits, bool nct) : window_bits(clamp_window_bits(bits)), no_context_takeover(nct) {
        int rc = inflateInit2(&zs, -window_bits);
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        // Other failures mean a zlib built without raw inflate: nothing a caller can fix.
        if (rc != Z_OK) throw std::bad_alloc();
    }
    ~impl() { inflateEnd(&zs); }
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    // A BFINAL block ended the zlib stream but the message may go on (RFC 7692 §7.2.3.4):
    // start a new raw stream on the same window, so back-references still resolve.
    // inflateResetKeep() leaves the window where it is: no copy, no allocation, so a peer's
    // run of empty final blocks (03 00, two bytes each) costs a reset per block, not 32 KiB
    // copied out and back.
    bool restart_keeping_window() { return inflateResetKeep(&zs) == Z_OK; }

    std::error_code run(std::span<const std::uint8_t> input, byte_buffer& out, std::size_t limit) {
        const std::uint8_t* next = input.data();
        std::size_t remaining = input.size();
        zs.avail_in = 0;
        for (;;) {
            if (zs.avail_in == 0 && remaining != 0) {
                auto chunk = static_cast<uInt>(std::min<std::size_t>(remaining, UINT_MAX));
                zs.next_in = const_cast<Bytef*>(next); // zlib never writes through next_in
                zs.avail_in = chunk;
                next += chunk;
                remaining -= chunk;
            }
            if (out.size() > limit) return error::message_too_big;
            // One byte beyond the limit is room enough to learn that the message is too big.
            std::size_t room = limit - out.size();
            if (room != SIZE_MAX) ++room;
            int rc;
            if (room == 1 && out.capacity() == out.size()) {
                // Exactly at the limit with a full buffer: growing it (doubling) only to learn
                // whether one more byte comes would double a bomb's memory; a probe byte tells.
                Bytef probe;
                zs.next_out = &probe;
                zs.avail_out = 1;
                rc = inflate(&zs, Z_SYNC_FLUSH);
                if (zs.avail_out == 0) return error::message_too_big;
            } else {
                std::size_t step = std::clamp<std::size_t>(std::size_t{zs.avail_in} * 4,
                                                           min_output_step, max_output_step);
                // Ask only up to the limit itself: the byte past it never justifies growing.
                auto space = out.prepare(std::min(room - 1, step));
                auto avail = static_cast<uInt>(std::min({space.size(), room, std::size_t{UINT_MAX}}));
                zs.next_out = space.data();
                zs.avail_out = avail;
                rc = inflate(&zs, Z_SYNC_FLUSH);
                out.commit(avail - zs.avail_out);
                if (out.size() > limit) return error::message_too_big;
            }
            switch (rc) {
            case Z_OK:
                break;
            case Z_STREAM_END:
                if (!restart_keeping_window()) return error::inflate_failed;
                after_final = zs.avail_in == 0 && remaining == 0;
                if (after_final) return {};
                continue;
            case Z_BUF_ERROR: // no progress possible: all input used and all output flushed
                if (zs.avail_in == 0 && remaining == 0) return {};
                return error::inflate_failed;
            case Z_MEM_ERROR:
                throw std::bad_alloc();
            default: // Z_DATA_ERROR, Z_NEED_DICT (impossible for raw), Z_STREAM_ERROR
                return error::inflate_failed;
            }
            if (zs.avail_in == 0 && remaining == 0 && zs.avail_out != 0) return {};
        }
    }
};

inflate_stream::inflate_stream(int window_bits, bool no_context_takeover)
    : impl_(std::make_unique<impl>(window_bits, no_context_takeover)) {}

inflate_stream::~inflate_stream() = default;
inflate_stream::inflate_stream(inflate_stream&&) noexcept = default;
inflate_stream& inflate_stream::operator=(inflate_stream&&) noexcept = default;

std::error_code inflate_stream::write(std::span<const std::uint8_t> fragment, byte_buffer& out,
                                      std::size_t limit) {
    if (fragment.empty()) return {};
    impl_->got_input = true;
    impl_->after_final = false;
    return impl_->run(fragment, out, limit);
}

std::error_code inflate_stream::finish(byte_buffer& out, std::size_t limit) {
    impl& s = *impl_;
    if (s.got_input && !s.after_final) {
        if (auto ec = s.run(flush_tail, out, limit)) return ec;
        // The tail is a whole empty stored block: after it zlib must wait for a block header
        // (data_type bit 128), unless it was a final one that ended the stream. Anything else
        // means the payload stopped inside a block.
        if (!s.after_final && (s.zs.data_type & 128) == 0) return error::inflate_failed;
    }
    s.got_input = false;
    s.after_final = false;
    if (s.no_context_takeover && inflateReset(&s.zs) != Z_OK) return error::inflate_failed;
    return {};
}

void inflate_stream::reset() noexcept {
    inflateReset(&impl_->zs);
    impl_->got_input = false;
    impl_->after_final = false;
}

int inflate_stream::window_bits() const noexcept { return impl_->window_bits; }

bool inflate_stream::no_context_takeover() const noexcept { return impl_->no_context_takeover; }

} // namespace corows
