// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/platform.hpp>
#include <corows/detail/shared_inflater.hpp>
#include <corows/protocol/inflate_stream.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <array>
#include <memory>

namespace corows::detail {

std::error_code inflate_shared(std::span<const std::uint8_t> payload, int window_bits,
                               byte_buffer& out, std::size_t limit) {
    // One per window size: a larger window would accept distances the peer agreed not to use.
    auto& inflaters = per_thread<std::array<std::unique_ptr<inflate_stream>, 8>, struct shared_inflaters>();
    int bits = clamp_window_bits(window_bits);
    auto& slot = inflaters[static_cast<std::size_t>(bits - 8)];
    if (!slot) slot = std::make_unique<inflate_stream>(bits, true);
    std::error_code ec;
    try {
        ec = slot->write(payload, out, limit);
        if (!ec) ec = slot->finish(out, limit);
    } catch (...) {
        slot->reset();
        throw;
    }
    if (ec) slot->reset(); // finish() resets only on success
    return ec;
}

} // namespace corows::detail
