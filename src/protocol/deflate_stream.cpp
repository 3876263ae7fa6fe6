// SPDX-License-Identifier: BSL-1.0
#include <corows/error.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <new>

namespace corows {

struct deflate_stream::impl {
    z_stream zs{};
    byte_buffer out;
    int window_bits = 15;
    bool no_context_takeover = false;
    bool fed = false; // input went in since the last flush

    impl(int bits, bool nct, int level, int mem_level)
        : window_bits(clamp_window_bits(bits)), no_context_takeover(nct) {
        // zlib's raw deflate rejects 8; 9 never reaches further back than 8 allows (see header).
        int zbits = std::max(window_bits, 9);
        int rc = deflateInit2(&zs, std::clamp(level, -1, 9), Z_DEFLATED, -zbits,
                              std::clamp(mem_level, 1, 9), Z_DEFAULT_STRATEGY);
        if (rc != Z_OK) throw std::bad_alloc();
    }
    ~impl() { deflateEnd(&zs); }
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    // Runs deflate over `input` with `flush`, appending to `out` until zlib has nothing left.
    bool run(std::span<const std::uint8_t> input, int flush) {
        const std::uint8_t* next = input.data();
        std::size_t remaining = input.size();
        for (;;) {
            auto chunk = static_cast<uInt>(std::min<std::size_t>(remaining, UINT_MAX));
            bool last_chunk = chunk == remaining;
            zs.next_in = const_cast<Bytef*>(next); // zlib never writes through next_in
            zs.avail_in = chunk;
            next += chunk;
            remaining -= chunk;
            int mode = last_chunk ? flush : Z_NO_FLUSH;
            // deflateBound covers a whole stream; the flush marker and pending bits add a few
            // bytes, so the common case finishes in one call and one reservation.
            std::size_t want = deflateBound(&zs, chunk) + 16;
            do {
                auto space = out.prepare(want);
                auto avail = static_cast<uInt>(std::min<std::size_t>(space.size(), UINT_MAX));
                zs.next_out = space.data();
                zs.avail_out = avail;
                int rc = deflate(&zs, mode);
                out.commit(avail - zs.avail_out);
                if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
                want = out.capacity() - out.size() + 1; // full: ask for more (doubles)
                // zlib: when avail_out is 0 after a flush, call again with the same flush.
            } while (zs.avail_out == 0);
            if (zs.avail_in != 0) return false;
            if (last_chunk) return true;
        }
    }

    std::span<const std::uint8_t> part(std::span<const std::uint8_t> in, bool fin,
                                       std::error_code& ec) {
        ec.clear();
        out.clear();
        if (out.capacity() > max_retained_output && in.size() < max_retained_output / 2)
            out.shrink_to(0);
        if (!in.empty()) {
            if (!run(in, fin ? Z_SYNC_FLUSH : Z_NO_FLUSH)) return fail(ec);
            fed = true;
        } else if (fin && fed) {
            if (!run(in, Z_SYNC_FLUSH)) return fail(ec);
        }
        if (!fin) return out.data();
        if (!fed) {
            // Nothing since the last flush: zlib would refuse a second flush (Z_BUF_ERROR),
            // and a lone stored-block header is the empty message of RFC 7692 §7.2.3.6.
            static constexpr std::uint8_t empty_block[1] = {0x00};
            out.append(empty_block);
        } else {
            auto d = out.data();
            if (d.size() < 4 || d[d.size() - 4] != 0x00 || d[d.size() - 3] != 0x00 ||
                d[d.size() - 2] != 0xff || d[d.size() - 1] != 0xff)
                return fail(ec);
            out.truncate(d.size() - 4);
        }
        fed = false;
        if (no_context_takeover && deflateReset(&zs) != Z_OK) return fail(ec);
        return out.data();
    }

    std::span<const std::uint8_t> fail(std::error_code& ec) {
        ec = error::deflate_failed;
        out.clear();
        return {};
    }
};

deflate_stream::deflate_stream(int window_bits, bool no_context_takeover, int level, int mem_level)
    : impl_(std::make_unique<impl>(window_bits, no_context_takeover, level, mem_level)) {}

deflate_stream::~deflate_stream() = default;
deflate_stream::deflate_stream(deflate_stream&&) noexcept = default;
deflate_stream& deflate_stream::operator=(deflate_stream&&) noexcept = default;

std::span<const std::uint8_t> deflate_stream::compress(std::span<const std::uint8_t> message,
                                                       std::error_code& ec) {
    return impl_->part(message, true, ec);
}

std::span<const std::uint8_t> deflate_stream::compress_part(std::span<const std::uint8_t> part,
                                                            bool fin, std::error_code& ec) {
    return impl_->part(part, fin, ec);
}

void deflate_stream::reset() noexcept {
    deflateReset(&impl_->zs);
    impl_->fed = false;
    impl_->out.clear();
}

int deflate_stream::window_bits() const noexcept { return impl_->window_bits; }

bool deflate_stream::no_context_takeover() const noexcept { return impl_->no_context_takeover; }

std::size_t deflate_stream::output_capacity() const noexcept { return impl_->out.capacity(); }

} // namespace corows
