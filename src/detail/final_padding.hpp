// SPDX-License-Identifier: BSL-1.0
// Where a one-block DEFLATE stream's end-of-block code ends, read from its block header
// alone: the code of symbol 256 is known once the Huffman code lengths are, and the stream's
// last bits must be that code followed by zero padding. It spares to_flush_form() a trial
// inflate of every message the shared compressor makes.
#pragma once

#include <cstdint>
#include <span>

namespace corows::detail {

/// For a raw DEFLATE stream made of one final block (fixed or dynamic Huffman): bit k of the
/// result is set when the stream's last bits read as that block's end-of-block code followed
/// by k zero padding bits (0 <= k <= 7). The true padding is always among them; more than one
/// may fit. 0 for anything else (a stored block, a header that does not parse).
std::uint8_t final_padding_candidates(std::span<const std::uint8_t> stream) noexcept;

} // namespace corows::detail
