#include "final_padding.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>

// RFC 1951 §3.2: fields are read least significant bit first, Huffman codes most significant
// bit first. Only the header is decoded: the code-length code, then the literal/length and
// distance code lengths; never a symbol of the data.

namespace corows::detail {
namespace {

constexpr unsigned max_code_bits = 15;

// The longest a dynamic block header can be: 3 + 14 + 19 x 3 bits, then 286 + 30 code
// lengths of at most 7 + 7 bits each.
constexpr std::size_t max_header_bytes = (3 + 14 + 19 * 3 + (286 + 30) * 14 + 7) / 8;

// Reads a copy of the stream's first bytes, zero-padded so that a 64-bit load never leaves it;
// whether the header stayed within the stream is checked once, at the end.
class bit_reader {
public:
    explicit bit_reader(std::span<const std::uint8_t> s) noexcept : limit_(std::min(s.size(), max_header_bytes) * 8) {
        std::memcpy(buf_.data(), s.data(), limit_ / 8);
    }

    /// The next `n` (<= 32) bits without consuming them, first bit lowest.
    std::uint32_t peek(unsigned n) const noexcept {
        std::uint64_t w;
        std::memcpy(&w, buf_.data() + std::min(pos_ / 8, max_header_bytes), 8);
        if constexpr (std::endian::native == std::endian::big) w = byteswap(w);
        return static_cast<std::uint32_t>((w >> (pos_ % 8)) & ((std::uint64_t{1} << n) - 1));
    }
    void skip(unsigned n) noexcept { pos_ += n; }
    /// `n` bits as a number, first bit lowest.
    unsigned field(unsigned n) noexcept {
        const unsigned v = peek(n);
        skip(n);
        return v;
    }
    /// True while nothing was read past the stream (or past the longest header).
    bool ok() const noexcept { return pos_ <= limit_; }
    std::size_t position() const noexcept { return pos_; }

private:
    static std::uint64_t byteswap(std::uint64_t v) noexcept {
        std::uint64_t r = 0;
        for (int i = 0; i < 8; ++i) r = (r << 8) | ((v >> (8 * i)) & 0xffu);
        return r;
    }

    std::array<std::uint8_t, max_header_bytes + 16> buf_{};
    std::size_t limit_;
    std::size_t pos_ = 0;
};

// The code-length code as a table indexed by the next 7 stream bits: symbol and length.
class code_length_code {
public:
    /// False for lengths that over-subscribe the code.
    bool build(const std::array<std::uint8_t, 19>& lengths) noexcept {
        std::array<unsigned, 8> count{};
        for (auto l : lengths) ++count[l];
        count[0] = 0;
        int left = 1;
        for (unsigned len = 1; len <= 7; ++len) {
            left = left * 2 - static_cast<int>(count[len]);
            if (left < 0) return false;
        }
        std::array<unsigned, 8> next{};
        unsigned c = 0;
        for (unsigned len = 1; len <= 7; ++len) {
            c = (c + count[len - 1]) << 1;
            next[len] = c;
        }
        table_.fill(entry{0, 0}); // length 0: no such code
        for (unsigned sym = 0; sym < 19; ++sym) {
            const unsigned len = lengths[sym];
            if (len == 0) continue;
            const unsigned code = next[len]++;
            unsigned reversed = 0; // stream order: the code's first bit is read first
            for (unsigned i = 0; i < len; ++i) reversed |= ((code >> i) & 1u) << (len - 1 - i);
            for (unsigned fill = reversed; fill < 128; fill += 1u << len)
                table_[fill] = entry{static_cast<std::uint8_t>(sym), static_cast<std::uint8_t>(len)};
        }
        return true;
    }
    /// The next symbol, or -1 for a code the lengths do not define.
    int decode(bit_reader& in) const noexcept {
        const entry e = table_[in.peek(7)];
        if (e.length == 0) return -1;
        in.skip(e.length);
        return e.symbol;
    }

private:
    struct entry {
        std::uint8_t symbol;
        std::uint8_t length;
    };
    std::array<entry, 128> table_{};
};

// The code of symbol 256 (most significant bit first, as it goes into the stream) and its
// length under canonical literal/length `lengths` (RFC 1951 §3.2.2); length 0 if it has none.
void end_of_block_code(std::span<const std::uint8_t> lengths, unsigned& code, unsigned& bits) {
    std::array<unsigned, max_code_bits + 1> count{}, before{}; // before: among symbols < 256
    for (std::size_t s = 0; s < 256; ++s) ++before[lengths[s]];
    for (std::size_t s = 256; s < lengths.size(); ++s) ++count[lengths[s]];
    for (unsigned len = 0; len <= max_code_bits; ++len) count[len] += before[len];
    count[0] = 0;
    bits = lengths[256];
    unsigned c = 0;
    for (unsigned len = 1; len <= bits; ++len) c = (c + count[len - 1]) << 1;
    code = c + before[bits];
}

} // namespace

std::uint8_t final_padding_candidates(std::span<const std::uint8_t> stream) noexcept {
    if (stream.empty()) return 0;
    bit_reader in(stream);
    const unsigned final_bit = in.field(1), type = in.field(2);
    if (final_bit != 1) return 0;
    unsigned eob_code = 0, eob_bits = 7; // fixed Huffman: 256 is 0000000
    if (type == 2) {
        const unsigned hlit = in.field(5) + 257, hdist = in.field(5) + 1, hclen = in.field(4) + 4;
        if (hlit > 286 || hdist > 30) return 0;
        static constexpr std::array<std::uint8_t, 19> order{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
        std::array<std::uint8_t, 19> cl_lengths{};
        for (unsigned i = 0; i < hclen; ++i) cl_lengths[order[i]] = static_cast<std::uint8_t>(in.field(3));
        code_length_code cl;
        if (!cl.build(cl_lengths)) return 0;
        std::array<std::uint8_t, 286 + 30> lengths{};
        const unsigned total = hlit + hdist;
        for (unsigned i = 0; i < total;) {
            const int sym = cl.decode(in);
            if (sym < 0 || !in.ok()) return 0;
            if (sym < 16) {
                lengths[i++] = static_cast<std::uint8_t>(sym);
                continue;
            }
            unsigned repeat;
            std::uint8_t value = 0;
            if (sym == 16) {
                if (i == 0) return 0;
                value = lengths[i - 1];
                repeat = 3 + in.field(2);
            } else if (sym == 17) {
                repeat = 3 + in.field(3);
            } else {
                repeat = 11 + in.field(7);
            }
            if (i + repeat > total) return 0;
            for (unsigned r = 0; r < repeat; ++r) lengths[i++] = value;
        }
        if (!in.ok()) return 0;
        end_of_block_code(std::span(lengths).first(hlit), eob_code, eob_bits);
        if (eob_bits == 0) return 0;
    } else if (type != 1 || !in.ok()) {
        return 0;
    }
    const std::size_t header_end = in.position();
    const std::size_t size = stream.size() * 8;
    // The stream's last (up to) 64 bits as one number, the last bit highest: the code read in
    // stream order is its bit-reversed value.
    const std::size_t tail_bytes = std::min<std::size_t>(stream.size(), 8);
    std::uint64_t tail = 0;
    for (std::size_t i = 0; i < tail_bytes; ++i)
        tail |= std::uint64_t{stream[stream.size() - tail_bytes + i]} << (8 * i);
    const unsigned tail_bits = static_cast<unsigned>(tail_bytes * 8);
    unsigned eob_stream = 0;
    for (unsigned i = 0; i < eob_bits; ++i) eob_stream |= ((eob_code >> i) & 1u) << (eob_bits - 1 - i);
    const std::uint64_t eob_mask = (std::uint64_t{1} << eob_bits) - 1;
    std::uint8_t candidates = 0;
    for (unsigned pad = 0; pad < 8; ++pad) {
        if (size < header_end + eob_bits + pad || tail_bits < eob_bits + pad) break;
        const unsigned end = tail_bits - pad; // in `tail`
        const bool zero_padding = pad == 0 || (tail >> end) == 0;
        if (zero_padding && ((tail >> (end - eob_bits)) & eob_mask) == eob_stream)
            candidates |= static_cast<std::uint8_t>(1u << pad);
    }
    return candidates;
}

} // namespace corows::detail
