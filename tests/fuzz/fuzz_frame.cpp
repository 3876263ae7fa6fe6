// SPDX-License-Identifier: BSL-1.0
// Arbitrary bytes through a decode loop under several rule sets. Beyond "does not crash", it
// checks what the codec promises: the inline and general decoders agree, positions stay in
// the buffer, every accepted header obeys the rules and re-encodes to the very bytes it was
// read from (the decoder accepts only minimal encodings), a truncated buffer never
// contradicts the whole one, and unmasking in two pieces equals unmasking at once. The batch
// decoder, decode_frames(), must find the same frames and unmask the same bytes as
// decode_frame() and apply_mask() one frame at a time, however little room it is given.
#include <corows/protocol/frame.hpp>
#include <corows/protocol/mask.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool same_result(const corows::decoded_frame& a, const corows::decoded_frame& b) {
    using corows::decode_status;
    if (a.status != b.status) return false;
    if (a.status == decode_status::failed) return a.err == b.err;
    if (a.missing != b.missing) return false;
    if (a.status == decode_status::need_more) return true;
    if (!(a.header == b.header) || a.payload_pos != b.payload_pos) return false;
    return a.status != decode_status::complete || a.next_pos == b.next_pos;
}

bool is_frame_error(corows::error e) {
    return e >= corows::error::reserved_opcode && e <= corows::error::frame_too_big;
}

void check_header(const corows::frame_header& h, const corows::frame_rules& rules,
                  std::span<const std::uint8_t> wire) {
    check(!h.rsv2 && !h.rsv3);
    check(!h.rsv1 || rules.allow_rsv1);
    check(h.masked == (rules.receiver == corows::role::server));
    check(h.payload_length <= rules.max_frame_size);
    check((h.payload_length >> 63) == 0);
    if (corows::is_control(h.op)) check(h.fin && h.payload_length <= 125);
    std::array<std::uint8_t, corows::max_frame_header_size> out{};
    const std::size_t n = corows::encode_frame_header(h, out);
    check(n == wire.size());
    check(std::memcmp(out.data(), wire.data(), n) == 0);
}

void decode_all(std::vector<std::uint8_t> data, const corows::frame_rules& rules, std::size_t cut) {
    using corows::decode_status;
    const std::span<const std::uint8_t> buf(data);
    std::size_t pos = 0;
    for (;;) {
        const corows::decoded_frame f = corows::decode_frame(buf, pos, rules);
        check(same_result(f, corows::detail::decode_frame_general(buf, pos, rules)));

        // Fewer bytes may only say "need more" or show the same thing.
        const std::size_t shorter = pos + (buf.size() - pos) * (cut % 256) / 256;
        const corows::decoded_frame t = corows::decode_frame(buf.first(shorter), pos, rules);
        switch (f.status) {
        case decode_status::failed:
            check(t.status == decode_status::need_more ||
                  (t.status == decode_status::failed && t.err == f.err));
            break;
        case decode_status::need_more: check(t.status == decode_status::need_more); break;
        default:
            if (shorter < f.payload_pos) {
                check(t.status == decode_status::need_more);
            } else {
                check(t.status != decode_status::failed && t.status != decode_status::need_more);
                check(t.header == f.header && t.payload_pos == f.payload_pos);
            }
        }

        switch (f.status) {
        case decode_status::failed:
            check(is_frame_error(f.err));
            return;
        case decode_status::need_more:
            check(f.missing >= 1 && f.missing <= corows::max_frame_header_size);
            check(buf.size() - pos + f.missing <= corows::max_frame_header_size);
            return;
        case decode_status::partial:
            check(f.payload_pos > pos && f.payload_pos - pos >= 2 && f.payload_pos - pos <= 14);
            check(f.payload_pos <= buf.size());
            check(f.missing == f.header.payload_length - (buf.size() - f.payload_pos));
            check(f.missing > 0);
            check_header(f.header, rules, buf.subspan(pos, f.payload_pos - pos));
            return;
        case decode_status::complete: {
            check(f.payload_pos > pos && f.payload_pos - pos >= 2 && f.payload_pos - pos <= 14);
            check(f.next_pos >= f.payload_pos && f.next_pos <= buf.size());
            check(f.next_pos - f.payload_pos == f.header.payload_length);
            check_header(f.header, rules, buf.subspan(pos, f.payload_pos - pos));
            if (f.header.masked) {
                const std::span<std::uint8_t> payload(data.data() + f.payload_pos,
                                                      f.next_pos - f.payload_pos);
                std::vector<std::uint8_t> whole(payload.begin(), payload.end());
                corows::apply_mask(whole, f.header.key);
                const std::size_t split = payload.size() * (cut % 97) / 97;
                corows::apply_mask(payload.first(split), f.header.key);
                corows::apply_mask(payload.subspan(split), f.header.key, split);
                check(std::equal(whole.begin(), whole.end(), payload.begin()));
                // Masking is its own inverse.
                corows::apply_mask(whole, f.header.key);
                corows::apply_mask(whole, f.header.key);
                check(std::equal(whole.begin(), whole.end(), payload.begin()));
            }
            pos = f.next_pos;
            cut = cut * 31 + 7;
            break;
        }
        }
    }
}

// decode_frames() (both loops) against decode_frame() and apply_mask() frame by frame.
void batch_agrees(const std::vector<std::uint8_t>& input, const corows::frame_rules& rules, std::size_t room) {
    using batch_fn = std::size_t (*)(std::span<std::uint8_t>, std::size_t&, const corows::frame_rules&,
                                     std::span<corows::frame_ref>) noexcept;
    std::vector<std::uint8_t> want = input;
    std::vector<corows::frame_ref> frames;
    std::size_t stop = 0;
    for (;;) {
        const corows::decoded_frame f = corows::decode_frame(want, stop, rules);
        if (f.status != corows::decode_status::complete) break;
        if (f.header.masked)
            corows::apply_mask({want.data() + f.payload_pos, f.next_pos - f.payload_pos}, f.header.key);
        frames.push_back({f.payload_pos, f.header.payload_length | (std::uint64_t{want[stop]} << 56)});
        stop = f.next_pos;
    }
    for (const batch_fn fn : {batch_fn{&corows::decode_frames}, batch_fn{&corows::detail::decode_frames_portable}}) {
        std::vector<std::uint8_t> buf = input;
        std::vector<corows::frame_ref> out(room);
        std::size_t pos = 0;
        std::size_t seen = 0;
        for (;;) {
            const std::size_t n = fn(buf, pos, rules, out);
            check(n <= room);
            for (std::size_t i = 0; i < n; ++i, ++seen) {
                check(seen < frames.size());
                check(out[i].payload_pos == frames[seen].payload_pos);
                check(out[i].payload_length() == frames[seen].payload_length());
                check(out[i].first_byte() == frames[seen].first_byte());
            }
            if (n < room) break;
        }
        check(seen == frames.size());
        check(pos == stop);
        check(buf == want);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::uint8_t> input(data, data + size);
    const std::size_t cut = size == 0 ? 0 : data[size - 1];
    const std::uint64_t limits[] = {UINT64_MAX, 1000, 125, 0};
    for (const auto receiver : {corows::role::server, corows::role::client})
        for (const bool rsv1 : {false, true})
            for (const std::uint64_t limit : limits)
                decode_all(input, {receiver, rsv1, limit}, cut);
    for (const auto receiver : {corows::role::server, corows::role::client})
        for (const bool rsv1 : {false, true})
            batch_agrees(input, {receiver, rsv1, cut % 2 == 0 ? UINT64_MAX : 100}, 1 + cut % 70);
    return 0;
}
