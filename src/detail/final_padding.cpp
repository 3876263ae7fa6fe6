// SPDX-License-Identifier: BSL-1.0
#include "final_padding.hpp"

#include <corows/detail/byte_order.hpp>

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

// Reads the stream from its first bit, 56 or more bits at a time. Past the end it reads zeros;
// whether the header stayed within the stream is checked where it ends.
class bit_reader {
public:
    explicit bit_reader(std::span<const std::uint8_t> s) noexcept
        : begin_(s.data()), next_(s.data()), end_(s.data() + s.size()) {}

    /// Makes at least 56 bits available to peek() and skip().
    void refill() noexcept {
        if (end_ - next_ >= 8) {
            bits_ |= load_little_endian64(next_) << held_;
            next_ += (63 - held_) / 8;
            held_ |= 56;
            return;
        }
        for (; held_ <= 56; held_ += 8) {
            if (next_ != end_)
                bits_ |= std::uint64_t{*next_++} << held_;
            else
                ++beyond_;
        }
    }
    /// The next `n` (< 32) held bits, first bit lowest.
    std::uint32_t peek(unsigned n) const noexcept {
        return static_cast<std::uint32_t>(bits_ & ((std::uint64_t{1} << n) - 1));
    }
    void skip(unsigned n) noexcept {
        bits_ >>= n;
        held_ -= n;
    }
    /// `n` bits as a number, first bit lowest.
    unsigned field(unsigned n) noexcept {
        const unsigned v = peek(n);
        skip(n);
        return v;
    }
    unsigned held() const noexcept { return held_; }
    /// How many bits have been consumed.
    std::size_t position() const noexcept {
        return static_cast<std::size_t>(next_ - begin_ + static_cast<std::ptrdiff_t>(beyond_)) * 8 - held_;
    }
    /// True while nothing was read past the stream.
    bool ok() const noexcept { return position() <= static_cast<std::size_t>(end_ - begin_) * 8; }

private:
    const std::uint8_t* begin_;
    const std::uint8_t* next_;
    const std::uint8_t* end_;
    std::size_t beyond_ = 0; // zero bytes read past the end
    std::uint64_t bits_ = 0;
    unsigned held_ = 0;
};

// What a code-length symbol says (RFC 1951 §3.2.7): 0-15 a length once; 16 the previous
// length 3-6 times; 17 and 18 zero 3-10 and 11-138 times; the count's base and extra bits.
struct code_length_symbol {
    std::uint8_t symbol;
    std::uint8_t code_bits;  // 0: no code of the code-length code reads this way
    std::uint8_t extra_bits; // after the code
    std::uint8_t base;       // how many times, before the extra bits are added
};

// The code-length code as a table indexed by the next `bits_` stream bits (the longest code's
// length, at most 7).
class code_length_code {
public:
    /// False for lengths that over-subscribe the code.
    bool build(const std::array<std::uint8_t, 19>& lengths) noexcept {
        std::array<unsigned, 8> count{};
        for (auto l : lengths) ++count[l];
        count[0] = 0;
        int left = 1;
        bits_ = 0;
        for (unsigned len = 1; len <= 7; ++len) {
            left = left * 2 - static_cast<int>(count[len]);
            if (left < 0) return false;
            if (count[len] != 0) bits_ = len;
        }
        const unsigned size = 1u << bits_;
        // An incomplete code leaves entries that no symbol fills.
        if (left != 0) std::fill_n(table_.begin(), size, code_length_symbol{0, 0, 0, 0});
        std::array<unsigned, 8> next{};
        unsigned c = 0;
        for (unsigned len = 1; len <= 7; ++len) {
            c = (c + count[len - 1]) << 1;
            next[len] = c;
        }
        static constexpr std::uint8_t extra[3] = {2, 3, 7}, base[3] = {3, 3, 11};
        for (unsigned sym = 0; sym < 19; ++sym) {
            const unsigned len = lengths[sym];
            if (len == 0) continue;
            // Stream order: the code's first bit is read first.
            const unsigned reversed = reversed7[next[len]++] >> (7 - len);
            const code_length_symbol e{static_cast<std::uint8_t>(sym), static_cast<std::uint8_t>(len),
                                       sym < 16 ? std::uint8_t{0} : extra[sym - 16],
                                       sym < 16 ? std::uint8_t{1} : base[sym - 16]};
            for (unsigned fill = reversed; fill < size; fill += 1u << len) table_[fill] = e;
        }
        return true;
    }
    /// The entry for the code at the front of `in` (which holds at least 7 bits).
    code_length_symbol lookup(const bit_reader& in) const noexcept { return table_[in.peek(bits_)]; }

private:
    static constexpr std::array<std::uint8_t, 128> reversed7 = [] {
        std::array<std::uint8_t, 128> r{};
        for (unsigned v = 0; v < 128; ++v)
            for (unsigned b = 0; b < 7; ++b)
                if ((v >> b) & 1u) r[v] = static_cast<std::uint8_t>(r[v] | (1u << (6 - b)));
        return r;
    }();
    std::array<code_length_symbol, 128> table_;
    unsigned bits_ = 0;
};

// Reads a dynamic block's code lengths and finds the code of symbol 256 (most significant bit
// first, as it goes into the stream) and its length (RFC 1951 §3.2.2): false if the header
// does not parse or 256 has no code. The lengths themselves are not kept: a canonical code
// needs only how many literal/length symbols have each length, and how many of those come
// before 256, so the loop keeps one running count and copies it as it passes 256 and HLIT.
bool dynamic_end_of_block_code(bit_reader& in, unsigned& code, unsigned& bits) noexcept {
    in.refill();
    const unsigned hlit = in.field(5) + 257, hdist = in.field(5) + 1, hclen = in.field(4) + 4;
    if (hlit > 286 || hdist > 30) return false;
    static constexpr std::array<std::uint8_t, 19> order{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    std::array<std::uint8_t, 19> cl_lengths{};
    for (unsigned i = 0; i < hclen; ++i) {
        if (in.held() < 3) in.refill();
        cl_lengths[order[i]] = static_cast<std::uint8_t>(in.field(3));
    }
    code_length_code cl;
    if (!cl.build(cl_lengths)) return false;
    std::array<unsigned, max_code_bits + 1> count{}, before{}, literal{};
    // Past every length until the first one is read: symbol 16 may not come first.
    unsigned eob_bits = 0, previous = max_code_bits + 1;
    const unsigned total = hlit + hdist;
    unsigned boundary = 256; // the next place where a copy of `count` is due
    for (unsigned i = 0; i < total;) {
        if (in.held() < 14) in.refill(); // a code of 7 bits and 7 extra bits at most
        const code_length_symbol e = cl.lookup(in);
        if (e.code_bits == 0) return false;
        in.skip(e.code_bits);
        unsigned value = e.symbol, stop = i + 1;
        if (value > max_code_bits) { // a run
            stop = i + e.base + in.field(e.extra_bits);
            value = value == 16 ? previous : 0;
            if (stop > total || value > max_code_bits) return false;
        }
        while (stop > boundary) [[unlikely]] { // twice a header
            count[value] += boundary - i;
            i = boundary;
            if (boundary == 256) {
                eob_bits = value;
                before = count;
                boundary = hlit;
            } else {
                literal = count;
                boundary = total;
            }
        }
        count[value] += stop - i;
        previous = value;
        i = stop;
    }
    if (!in.ok() || eob_bits == 0) return false;
    literal[0] = 0;
    unsigned c = 0;
    for (unsigned len = 1; len <= eob_bits; ++len) c = (c + literal[len - 1]) << 1;
    code = c + before[eob_bits];
    bits = eob_bits;
    return true;
}

} // namespace

std::uint8_t final_padding_candidates(std::span<const std::uint8_t> stream) noexcept {
    if (stream.empty()) return 0;
    bit_reader in(stream);
    in.refill();
    const unsigned final_bit = in.field(1), type = in.field(2);
    if (final_bit != 1) return 0;
    unsigned eob_code = 0, eob_bits = 7; // fixed Huffman: 256 is 0000000
    if (type == 2) {
        if (!dynamic_end_of_block_code(in, eob_code, eob_bits)) return 0;
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
