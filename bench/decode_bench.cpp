// SPDX-License-Identifier: BSL-1.0
// Frame decoding throughput over packets of small frames, frame by frame (decode_frame +
// apply_mask, api=frame) and in batches (decode_frames, api=frames), and over large frames,
// each beside memcpy of the same payload bytes in the same run (the yardstick the design sets:
// decoding should cost within a small factor of copying the bytes once).
//
// Prints one line per measurement:
//   bench=decode api=frames frame_bytes=131 masked=1 per_packet=1000 frames_per_s=...
//   ns_per_frame=... vs_memcpy=...
//   bench=decode frame_bytes=65550 masked=1 per_packet=1 gb_per_s=... vs_memcpy=...
// vs_memcpy is our throughput divided by memcpy's: higher is better, 1 means as fast.
#include <corows/protocol/frame.hpp>
#include <corows/protocol/mask.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

// Keeps the compiler from proving that the bytes written are never read.
void escape(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

volatile std::uint64_t sink;
// Read at run time so the memcpy baseline is a real memcpy call of unknown length, as a
// receiver copying payloads out would make.
volatile std::size_t runtime_zero = 0;

std::vector<std::uint8_t> make_packet(std::size_t frames, std::size_t payload, bool masked) {
    std::vector<std::uint8_t> packet;
    std::uint32_t seed = 12345;
    for (std::size_t i = 0; i < frames; ++i) {
        corows::frame_header h;
        h.op = corows::opcode::binary;
        h.payload_length = payload;
        h.masked = masked;
        h.key = {0x37, 0xfa, 0x21, static_cast<std::uint8_t>(i)};
        std::array<std::uint8_t, corows::max_frame_header_size> head{};
        const std::size_t n = corows::encode_frame_header(h, head);
        packet.insert(packet.end(), head.begin(), head.begin() + static_cast<std::ptrdiff_t>(n));
        for (std::size_t j = 0; j < payload; ++j) {
            seed = seed * 1103515245u + 12345u;
            packet.push_back(static_cast<std::uint8_t>(seed >> 16));
        }
    }
    return packet;
}

/// Decodes (and unmasks) every frame of the packet; returns a value depending on all of them.
std::uint64_t decode_packet(std::vector<std::uint8_t>& packet, const corows::frame_rules& rules) {
    const std::span<const std::uint8_t> buf(packet);
    std::uint64_t sum = 0;
    std::size_t pos = 0;
    while (pos < buf.size()) {
        const corows::decoded_frame f = corows::decode_frame(buf, pos, rules);
        if (f.status != corows::decode_status::complete) [[unlikely]]
            std::abort();
        if (f.header.masked)
            corows::apply_mask({packet.data() + f.payload_pos,
                                static_cast<std::size_t>(f.header.payload_length)},
                               f.header.key);
        sum += f.header.payload_length;
        pos = f.next_pos;
    }
    escape(packet.data());
    return sum;
}

/// The same through decode_frames(), 64 frames per call.
std::uint64_t decode_packet_batch(std::vector<std::uint8_t>& packet, const corows::frame_rules& rules) {
    std::array<corows::frame_ref, 64> refs;
    std::uint64_t sum = 0;
    std::size_t pos = 0;
    while (pos < packet.size()) {
        const std::size_t n = corows::decode_frames(packet, pos, rules, refs);
        if (n == 0) [[unlikely]]
            std::abort();
        for (std::size_t i = 0; i < n; ++i) sum += refs[i].payload_length();
    }
    escape(packet.data());
    return sum;
}

/// Copies out each frame's payload, at positions known in advance (no decoding at all).
std::uint64_t copy_payloads(const std::vector<std::uint8_t>& packet, std::vector<std::uint8_t>& out,
                            std::size_t frames, std::size_t frame_bytes, std::size_t header) {
    const std::size_t payload = frame_bytes - header + runtime_zero;
    for (std::size_t i = 0; i < frames; ++i)
        std::memcpy(out.data() + i * payload, packet.data() + i * frame_bytes + header, payload);
    escape(out.data());
    return out[0];
}

/// Seconds for `iters` calls of `fn`.
template <class Fn>
double time_it(Fn&& fn, std::size_t iters) {
    std::uint64_t acc = 0;
    const auto start = clock_type::now();
    for (std::size_t i = 0; i < iters; ++i) acc += fn();
    const auto stop = clock_type::now();
    sink = sink + acc;
    return std::chrono::duration<double>(stop - start).count();
}

struct pair_timing {
    double ours;   // best seconds per call
    double memcpy; // best seconds per call
};

/// Best-of-several seconds per call for both functions, interleaved so both see the same
/// machine conditions; about `budget` seconds in total.
template <class Ours, class Copy>
pair_timing measure(Ours&& ours, Copy&& copy, double budget = 0.3) {
    constexpr int repetitions = 50;
    std::size_t iters = 1;
    for (;;) { // calibrate on our function: one repetition should take budget/(2*reps)
        const double t = time_it(ours, iters);
        if (t > 0.005) {
            iters = std::max<std::size_t>(
                1, static_cast<std::size_t>(static_cast<double>(iters) * budget /
                                            (2 * repetitions) / t));
            break;
        }
        iters *= 4;
    }
    pair_timing best{1e30, 1e30};
    for (int r = 0; r < repetitions; ++r) {
        best.ours = std::min(best.ours, time_it(ours, iters) / static_cast<double>(iters));
        best.memcpy = std::min(best.memcpy, time_it(copy, iters) / static_cast<double>(iters));
    }
    return best;
}

std::size_t header_size(std::size_t payload, bool masked) {
    return (payload < 126 ? 2 : payload <= 0xFFFF ? 4 : 10) + (masked ? 4 : 0);
}

void small_frames(bool masked, std::size_t per_packet) {
    constexpr std::size_t payload = 125;
    const std::size_t header = header_size(payload, masked);
    const std::size_t frame_bytes = payload + header;
    std::vector<std::uint8_t> packet = make_packet(per_packet, payload, masked);
    std::vector<std::uint8_t> out(per_packet * payload);
    corows::frame_rules rules;
    rules.receiver = masked ? corows::role::server : corows::role::client;
    for (const bool batch : {false, true}) {
        const pair_timing t = measure(
            [&] { return batch ? decode_packet_batch(packet, rules) : decode_packet(packet, rules); },
            [&] { return copy_payloads(packet, out, per_packet, frame_bytes, header); });
        const double ns = t.ours * 1e9 / static_cast<double>(per_packet);
        std::printf("bench=decode api=%s frame_bytes=%zu masked=%d per_packet=%zu frames_per_s=%.0f "
                    "ns_per_frame=%.1f vs_memcpy=%.2f\n",
                    batch ? "frames" : "frame", frame_bytes, masked ? 1 : 0, per_packet, 1e9 / ns, ns,
                    t.memcpy / t.ours);
        std::fflush(stdout);
    }
}

void large_frame(std::size_t payload) {
    const std::size_t header = header_size(payload, true);
    std::vector<std::uint8_t> packet = make_packet(1, payload, true);
    std::vector<std::uint8_t> out(payload);
    corows::frame_rules rules;
    const pair_timing t = measure([&] { return decode_packet(packet, rules); },
                                  [&] { return copy_payloads(packet, out, 1, payload + header, header); });
    std::printf("bench=decode frame_bytes=%zu masked=1 per_packet=1 gb_per_s=%.1f vs_memcpy=%.2f\n",
                payload + header, static_cast<double>(payload) / t.ours / 1e9, t.memcpy / t.ours);
    std::fflush(stdout);
}

} // namespace

int main() {
    for (const bool masked : {true, false})
        for (const std::size_t per_packet : {1, 100, 1000}) small_frames(masked, per_packet);
    for (const std::size_t payload : {std::size_t{4096}, std::size_t{65536}, std::size_t{1} << 20})
        large_frame(payload);
}
