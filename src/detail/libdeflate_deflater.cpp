// SPDX-License-Identifier: BSL-1.0
#ifdef COROWS_HAS_LIBDEFLATE

#include "libdeflate_deflater.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <new>

namespace corows::detail {

void libdeflate_deflater::release::operator()(::libdeflate_compressor* c) const noexcept {
    libdeflate_free_compressor(c);
}

libdeflate_deflater::libdeflate_deflater(int level)
    : handle_(libdeflate_alloc_compressor(std::clamp(level, 0, 12))) {
    if (!handle_) throw std::bad_alloc();
}

bool libdeflate_deflater::compress(std::span<const std::uint8_t> in, byte_buffer& out) {
    out.clear();
    std::size_t bound = libdeflate_deflate_compress_bound(handle_.get(), in.size());
    auto space = out.prepare(bound);
    std::size_t n = libdeflate_deflate_compress(handle_.get(), in.data(), in.size(), space.data(),
                                                space.size());
    if (n == 0) return false;
    out.commit(n);
    return true;
}

} // namespace corows::detail

#endif
