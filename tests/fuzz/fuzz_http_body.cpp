// SPDX-License-Identifier: BSL-1.0
// The sans-I/O body decoder fed whole and in fuzzer-chosen pieces: both ways end alike, no
// body passes its bound, nothing past the body is consumed, and a chunked body that decoded
// decodes again from a re-encoding as one chunk.
//
// Input: a mode byte (length, chunked, until_close), a bound byte, a cut-seed byte, then the
// bytes after the head.
#include <corows/protocol/http_body.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

namespace {

using corows::http_body_decoder;
using corows::http_parse_status;

void check(bool ok) {
    if (!ok) std::abort();
}

http_body_decoder make(std::uint8_t mode, std::size_t bound) {
    switch (mode % 3) {
    case 0: return http_body_decoder::with_length(bound);
    case 1: return http_body_decoder::chunked(bound);
    default: return http_body_decoder::until_close(bound);
    }
}

struct outcome {
    corows::http_feed_result last;
    std::size_t consumed = 0;
    std::string body;
};

// Feeds `in` in pieces whose sizes a small generator seeded with `seed` picks (seed 0: whole).
outcome run(http_body_decoder d, std::span<const std::uint8_t> in, std::uint32_t seed) {
    outcome o;
    o.last.status = d.status();
    std::size_t at = 0;
    while (at < in.size() && o.last.status == http_parse_status::need_more) {
        std::size_t n = in.size() - at;
        if (seed != 0) {
            seed = seed * 1103515245u + 12345u;
            n = std::min<std::size_t>(n, 1 + (seed >> 16) % 7);
        }
        const auto before = o.body.size();
        o.last = d.feed(in.subspan(at, n), o.body);
        check(o.last.consumed <= n);
        if (o.last.status == http_parse_status::need_more) check(o.last.consumed == n);
        if (o.last.status != http_parse_status::failed) check(o.body.size() - before <= o.last.consumed);
        o.consumed += o.last.consumed;
        at += n;
    }
    check(d.status() == o.last.status);
    return o;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    const std::uint8_t mode = data[0];
    const std::size_t bound = std::size_t{data[1]} * 3;
    const std::uint32_t seed = data[2] | 1u;
    const std::span<const std::uint8_t> in(data + 3, size - 3);

    const auto whole = run(make(mode, bound), in, 0);
    const auto pieces = run(make(mode, bound), in, seed);
    check(whole.last.status == pieces.last.status);
    check(whole.last.error == pieces.last.error);
    check(whole.body == pieces.body);
    check(whole.body.size() <= bound);
    if (whole.last.status != http_parse_status::failed) check(whole.consumed == pieces.consumed);

    switch (mode % 3) {
    case 0:
    case 2: {
        // A prefix of the input, complete once it has `bound` bytes.
        const std::size_t n = std::min(bound, in.size());
        check(whole.body == std::string(reinterpret_cast<const char*>(in.data()), n));
        check((whole.last.status == http_parse_status::complete) == (in.size() >= bound));
        break;
    }
    default:
        if (whole.last.status == http_parse_status::complete) {
            char size_line[32];
            const int len = std::snprintf(size_line, sizeof size_line, "%zx\r\n", whole.body.size());
            std::string again(size_line, static_cast<std::size_t>(len));
            if (!whole.body.empty()) again += whole.body + "\r\n0\r\n";
            again += "\r\n";
            std::string body;
            auto d = http_body_decoder::chunked(bound);
            auto r = d.feed(again, body);
            check(r.status == http_parse_status::complete && r.consumed == again.size() && body == whole.body);
        }
    }
    return 0;
}
