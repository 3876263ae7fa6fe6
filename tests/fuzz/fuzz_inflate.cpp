// SPDX-License-Identifier: BSL-1.0
// Fuzzes inflate_stream with arbitrary data and deflate_stream/inflate_stream round trips.
// Input: byte 0 picks window bits (8..15), context takeover and the limit; byte 1 picks the
// compression level and mem level; byte 2 seeds the frame split points; the rest is data.
// Invariants: no crash; output never exceeds the limit by more than one byte and storage
// stays bounded; only inflate_failed/message_too_big are reported; compressing then
// inflating gives the input back, and the compressed data never reaches further back than
// the window allows (checked with a one-byte-at-a-time raw zlib inflater).
#include <corows/byte_buffer.hpp>
#include <corows/error.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/inflate_stream.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

// Splits `data` into frames at points drawn from a small LCG seeded by `seed`.
std::vector<std::span<const std::uint8_t>> frames(std::span<const std::uint8_t> data, unsigned seed) {
    std::vector<std::span<const std::uint8_t>> out;
    unsigned state = seed * 2654435761u + 1;
    std::size_t pos = 0;
    while (pos < data.size()) {
        state = state * 1103515245u + 12345u;
        std::size_t len = 1 + (state >> 16) % 64;
        if ((state >> 8) % 4 == 0) len = data.size() - pos; // often the rest in one go
        len = std::min(len, data.size() - pos);
        out.push_back(data.subspan(pos, len));
        pos += len;
    }
    return out;
}

void arbitrary_data(std::span<const std::uint8_t> data, int bits, bool nct, std::size_t limit,
                    unsigned seed) {
    corows::inflate_stream s(bits, nct);
    corows::byte_buffer out;
    // Two messages: the second sees whatever window the first left behind.
    std::size_t cut = data.empty() ? 0 : seed % (data.size() + 1);
    for (auto msg : {data.first(cut), data.subspan(cut)}) {
        out.clear();
        std::error_code ec;
        for (auto f : frames(msg, seed)) {
            ec = s.write(f, out, limit);
            if (ec) break;
        }
        if (!ec) ec = s.finish(out, limit);
        check(out.size() <= limit + 1);
        check(out.capacity() < std::max<std::size_t>(512, 2 * (limit + 1)));
        if (ec) {
            check(ec == corows::error::inflate_failed || ec == corows::error::message_too_big);
            // Too big is known from the byte past the limit, kept in the buffer unless the
            // buffer was full and only probed for it.
            if (ec == corows::error::message_too_big) check(out.size() >= limit);
            return;
        }
        check(out.size() <= limit);
    }
}

// Raw zlib with exactly 2^bits of window and one output byte per call: a distance beyond the
// window cannot be resolved from the current call's output, so zlib reports it.
bool strictly_inflates(z_stream& zs, std::span<const std::uint8_t> payload,
                       std::span<const std::uint8_t> expected) {
    std::vector<std::uint8_t> in(payload.begin(), payload.end());
    in.insert(in.end(), {0x00, 0x00, 0xff, 0xff});
    zs.next_in = in.data();
    zs.avail_in = static_cast<uInt>(in.size());
    std::size_t produced = 0;
    for (;;) {
        std::uint8_t c;
        zs.next_out = &c;
        zs.avail_out = 1;
        int rc = inflate(&zs, Z_SYNC_FLUSH);
        if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
        if (zs.avail_out == 0) {
            if (produced >= expected.size() || expected[produced] != c) return false;
            ++produced;
        }
        if (rc == Z_BUF_ERROR || (zs.avail_in == 0 && zs.avail_out == 1)) break;
    }
    return produced == expected.size();
}

void round_trip(std::span<const std::uint8_t> data, int bits, bool nct, int level, int mem_level,
                unsigned seed) {
    corows::deflate_stream d(bits, nct, level, mem_level);
    corows::inflate_stream s(bits, nct);
    z_stream strict{};
    check(inflateInit2(&strict, -bits) == Z_OK);
    // The data three times: as a whole message, again (takeover finds it in the window), then
    // in parts through compress_part().
    for (int round = 0; round < 3; ++round) {
        corows::byte_buffer out;
        std::vector<std::uint8_t> wire;
        std::error_code ec;
        if (round < 2) {
            auto payload = d.compress(data, ec);
            check(!ec);
            wire.assign(payload.begin(), payload.end());
            for (auto f : frames(payload, seed)) check(!s.write(f, out, SIZE_MAX));
        } else {
            auto parts = frames(data, seed + 1);
            if (parts.empty()) parts.emplace_back();
            for (std::size_t i = 0; i < parts.size(); ++i) {
                auto payload = d.compress_part(parts[i], i + 1 == parts.size(), ec);
                check(!ec);
                wire.insert(wire.end(), payload.begin(), payload.end());
                check(!s.write(payload, out, SIZE_MAX));
            }
        }
        check(!s.finish(out, SIZE_MAX));
        check(out.size() == data.size() && (data.empty() || std::memcmp(out.data().data(), data.data(), data.size()) == 0));
        check(strictly_inflates(strict, wire, data));
        if (nct) check(inflateReset(&strict) == Z_OK);
    }
    inflateEnd(&strict);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    int bits = 8 + (data[0] & 7);
    bool nct = (data[0] & 8) != 0;
    static constexpr std::size_t limits[] = {1u << 20, 64u << 10, 1000, 10};
    std::size_t limit = limits[(data[0] >> 4) & 3];
    int level = (data[1] % 11) - 1; // -1..9
    int mem_level = 1 + (data[1] >> 4) % 9;
    unsigned seed = data[2];
    std::span<const std::uint8_t> body(data + 3, size - 3);
    arbitrary_data(body, bits, nct, limit, seed);
    round_trip(body, bits, nct, level, mem_level, seed);
    return 0;
}
