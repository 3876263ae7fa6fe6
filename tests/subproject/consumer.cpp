// SPDX-License-Identifier: BSL-1.0
// Encodes a frame with corows and decodes it again, through the installed public headers.
#include <corows/protocol/frame.hpp>
#include <corows/protocol/mask.hpp>

#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
    const char text[] = "Hello";
    corows::frame_header h;
    h.op = corows::opcode::text;
    h.payload_length = 5;
    h.masked = true;
    h.key = {0x37, 0xfa, 0x21, 0x3d};
    std::array<std::uint8_t, corows::max_frame_header_size> head{};
    std::size_t n = corows::encode_frame_header(h, head);
    std::vector<std::uint8_t> wire(head.begin(), head.begin() + static_cast<long>(n));
    wire.insert(wire.end(), text, text + 5);
    corows::apply_mask(std::span(wire).subspan(n), h.key);

    // RFC 6455 §5.7: a masked "Hello".
    const std::uint8_t expected[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    if (wire.size() != sizeof expected || std::memcmp(wire.data(), expected, sizeof expected) != 0) {
        std::puts("encode mismatch");
        return 1;
    }
    auto f = corows::decode_frame(wire, 0, corows::frame_rules{corows::role::server});
    if (f.status != corows::decode_status::complete || f.next_pos != wire.size()) {
        std::puts("decode failed");
        return 1;
    }
    corows::apply_mask(std::span(wire).subspan(f.payload_pos), f.header.key);
    if (std::memcmp(wire.data() + f.payload_pos, text, 5) != 0) {
        std::puts("payload mismatch");
        return 1;
    }
    std::puts("consumer: frame round trip ok");
    return 0;
}
