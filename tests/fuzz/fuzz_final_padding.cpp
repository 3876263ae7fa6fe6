// SPDX-License-Identifier: BSL-1.0
// detail::final_padding_candidates reads any bytes without reading past them, and whenever
// zlib reads the bytes as exactly one final block followed by zero padding (as every
// compressor writes it; zlib itself ignores the padding's value), that padding is among the
// candidates it gives.
#include "../../src/detail/final_padding.hpp"

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::uint8_t candidates = corows::detail::final_padding_candidates(std::span(data, size));
    if (size == 0 || size > 4096) return 0;
    z_stream zs{};
    if (inflateInit2(&zs, -15) != Z_OK) return 0;
    std::vector<std::uint8_t> out(64 * 1024);
    zs.next_in = const_cast<Bytef*>(data);
    zs.avail_in = static_cast<uInt>(size);
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&zs, Z_BLOCK);
    // One call with Z_BLOCK stops at the end of the first block: the stream must end there,
    // and that block be the final one.
    const bool one_final_block = rc == Z_OK && (zs.data_type & 128) != 0 && (zs.data_type & 64) != 0 &&
                                 zs.avail_in == 0 && (data[0] & 6) != 0;
    const unsigned padding = static_cast<unsigned>(zs.data_type & 7);
    inflateEnd(&zs);
    const bool zero_padding = padding == 0 || (data[size - 1] >> (8 - padding)) == 0;
    if (one_final_block && zero_padding && ((candidates >> padding) & 1u) == 0) std::abort();
    return 0;
}
