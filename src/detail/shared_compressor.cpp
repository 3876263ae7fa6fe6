// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/platform.hpp>
#include <corows/detail/shared_compressor.hpp>
#include <corows/error.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include "flush_form.hpp"
#include "libdeflate_deflater.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

namespace corows::detail {
namespace {

// zlib streams keyed by what shapes their output; a thread sees few distinct settings.
struct zlib_entry {
    int window_bits;
    int level;
    int mem_level;
    std::unique_ptr<deflate_stream> stream;
};

deflate_stream& zlib_compressor(const shared_deflate_settings& s) {
    auto& streams = per_thread<std::vector<zlib_entry>, struct shared_zlib_streams>();
    int bits = clamp_window_bits(s.window_bits);
    int level = std::clamp(s.level, -1, 9);
    int mem_level = std::clamp(s.mem_level, 1, 9);
    for (auto& e : streams)
        if (e.window_bits == bits && e.level == level && e.mem_level == mem_level) return *e.stream;
    streams.push_back({bits, level, mem_level, std::make_unique<deflate_stream>(bits, true, level, mem_level)});
    return *streams.back().stream;
}

#ifdef COROWS_HAS_LIBDEFLATE
struct libdeflate_state {
    std::array<std::unique_ptr<libdeflate_deflater>, 13> by_level;
    byte_buffer out;
};

// The libdeflate level for a zlib level. libdeflate's 1 compresses JSON as tightly as zlib's
// 3 (bench/deflate_bench, 1 KiB: 0.468 against 0.474; 16 KiB: 0.214 against 0.216) in less
// time than its own 3, so zlib's 1..3 all map to it; zlib's -1 means 6; above 3 the numbers
// mean about the same in both.
int libdeflate_level(int zlib_level) noexcept {
    if (zlib_level < 0) return 6;
    if (zlib_level >= 1 && zlib_level <= 3) return 1;
    return std::min(zlib_level, 12);
}

std::span<const std::uint8_t> compress_libdeflate(std::span<const std::uint8_t> message,
                                                  const shared_deflate_settings& s,
                                                  std::error_code& ec) {
    auto& state = per_thread<libdeflate_state, struct shared_libdeflate_state>();
    int level = libdeflate_level(s.level);
    auto& slot = state.by_level[static_cast<std::size_t>(level)];
    if (!slot) slot = std::make_unique<libdeflate_deflater>(level);
    if (state.out.capacity() > deflate_stream::max_retained_output &&
        message.size() < deflate_stream::max_retained_output / 2)
        state.out.shrink_to(0);
    if (!slot->compress(message, state.out) ||
        (!s.final_block && !to_flush_form(state.out, message.size()))) {
        ec = error::deflate_failed;
        state.out.clear();
        return {};
    }
    return state.out.data();
}
#endif

} // namespace

bool libdeflate_available() noexcept {
#ifdef COROWS_HAS_LIBDEFLATE
    return true;
#else
    return false;
#endif
}

std::span<const std::uint8_t> compress_shared(std::span<const std::uint8_t> message,
                                              const shared_deflate_settings& settings,
                                              std::error_code& ec) {
    ec.clear();
#ifdef COROWS_HAS_LIBDEFLATE
    int bits = clamp_window_bits(settings.window_bits);
    if (settings.use_libdeflate && !message.empty() && message.size() <= (std::size_t{1} << bits))
        return compress_libdeflate(message, settings, ec);
#endif
    deflate_stream& stream = zlib_compressor(settings);
    auto out = stream.compress(message, ec);
    if (ec) stream.reset(); // the next connection on this thread must find it clean
    return out;
}

} // namespace corows::detail
