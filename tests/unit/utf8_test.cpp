// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/utf8.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;
constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

// What a correct validator must say about a byte string: the index of the first byte that
// no valid text can contain at that point (npos if none), and whether the text is complete.
struct verdict {
    std::size_t fail = npos;
    bool complete = true;

    bool valid() const { return fail == npos && complete; }
    bool operator==(const verdict&) const = default;
};

std::ostream& operator<<(std::ostream& os, const verdict& v)
{
    if (v.fail != npos) {
        return os << "fails at " << v.fail;
    }
    return os << (v.complete ? "valid" : "incomplete");
}

std::string hex(std::span<const std::uint8_t> b)
{
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    for (std::uint8_t x : b) {
        if (!out.empty()) {
            out += ' ';
        }
        out += digits[x >> 4];
        out += digits[x & 15];
    }
    return out;
}

// The textbook encoder (RFC 3629 §3), without any validity check, so it can also build
// surrogates and overlong or out-of-range sequences for the negative tests.
bytes encode_raw(std::uint32_t cp, int len)
{
    switch (len) {
    case 1:
        return {static_cast<std::uint8_t>(cp)};
    case 2:
        return {static_cast<std::uint8_t>(0xC0 | (cp >> 6)), static_cast<std::uint8_t>(0x80 | (cp & 63))};
    case 3:
        return {static_cast<std::uint8_t>(0xE0 | (cp >> 12)), static_cast<std::uint8_t>(0x80 | ((cp >> 6) & 63)),
                static_cast<std::uint8_t>(0x80 | (cp & 63))};
    default:
        return {static_cast<std::uint8_t>(0xF0 | (cp >> 18)), static_cast<std::uint8_t>(0x80 | ((cp >> 12) & 63)),
                static_cast<std::uint8_t>(0x80 | ((cp >> 6) & 63)), static_cast<std::uint8_t>(0x80 | (cp & 63))};
    }
}

int shortest_length(std::uint32_t cp)
{
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

bytes encode(std::uint32_t cp)
{
    return encode_raw(cp, shortest_length(cp));
}

// The reference: valid UTF-8 is, by definition, a concatenation of shortest-form encodings
// of Unicode scalar values. We list every one of them (1,112,064) and walk the input byte by
// byte; a byte fails as soon as the pending bytes are not the start of any listed encoding.
// Entries are the bytes left-aligned in 32 bits, then the length: because UTF-8 preserves
// code point order and no encoding is a prefix of another, generating by code point yields
// a sorted list, and a zero-filled prefix sorts just before all its extensions.
class reference_decoder {
public:
    reference_decoder()
    {
        table_.reserve(0x110000);
        for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
            if (cp >= 0xD800 && cp <= 0xDFFF) {
                continue;
            }
            const bytes e = encode(cp);
            table_.push_back(pack(e, e.size()));
        }
    }

    std::size_t size() const { return table_.size(); }
    bool sorted() const { return std::is_sorted(table_.begin(), table_.end()); }

    verdict check(std::span<const std::uint8_t> text) const
    {
        bytes pending;
        for (std::size_t i = 0; i < text.size(); ++i) {
            pending.push_back(text[i]);
            const std::uint64_t key = pack(pending, 0);
            const auto it = std::lower_bound(table_.begin(), table_.end(), key);
            const std::size_t n = pending.size();
            const std::uint64_t prefix_mask = ~std::uint64_t{0} << (8 + 8 * (4 - n));
            if (it == table_.end() || (*it & prefix_mask) != (key & prefix_mask)) {
                return {i, false};
            }
            if ((*it & 0xFF) == n) {
                pending.clear();
            }
        }
        return {npos, pending.empty()};
    }

private:
    static std::uint64_t pack(std::span<const std::uint8_t> b, std::size_t len)
    {
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            v = (v << 8) | (i < b.size() ? b[i] : 0);
        }
        return (v << 8) | len;
    }

    std::vector<std::uint64_t> table_;
};

const reference_decoder& reference()
{
    static const reference_decoder r;
    return r;
}

// Runs the validator over `text` cut at `cuts` (sorted, interior positions), checking each
// write's result and the final state against `expected`. Returns a description of the
// first disagreement, or an empty string.
std::string run_split(std::span<const std::uint8_t> text, std::span<const std::size_t> cuts, const verdict& expected)
{
    corows::utf8_validator v;
    std::size_t begin = 0;
    for (std::size_t k = 0; k <= cuts.size(); ++k) {
        const std::size_t end = k < cuts.size() ? cuts[k] : text.size();
        const bool ok = v.write(text.subspan(begin, end - begin));
        // A write succeeds exactly when the failing byte, if any, is not at or before its end.
        const bool want = expected.fail == npos || expected.fail >= end;
        if (ok != want) {
            std::ostringstream os;
            os << "write [" << begin << ", " << end << ") returned " << ok;
            return os.str();
        }
        begin = end;
    }
    if (v.finish() != expected.valid()) {
        return "finish() returned " + std::to_string(v.finish());
    }
    return {};
}

// Feeds `text` whole, one byte at a time, cut at every single point and (when short) at
// every pair of points, and checks that the prefix before the failing byte is accepted and
// the failing byte rejected.
void check_all_splits(std::span<const std::uint8_t> text, const verdict& expected)
{
    BOOST_TEST_CONTEXT(hex(text) << " expected " << expected)
    {
        BOOST_TEST(run_split(text, {}, expected) == "");
        BOOST_TEST(corows::is_valid_utf8(text) == expected.valid());

        std::vector<std::size_t> cuts;
        for (std::size_t i = 1; i < text.size(); ++i) {
            cuts.push_back(i);
        }
        BOOST_TEST(run_split(text, cuts, expected) == "");

        for (std::size_t i = 0; i <= text.size(); ++i) {
            const std::size_t one[] = {i};
            BOOST_TEST(run_split(text, one, expected) == "", "cut at " << i);
        }
        if (text.size() <= 12) {
            for (std::size_t i = 0; i <= text.size(); ++i) {
                for (std::size_t j = i; j <= text.size(); ++j) {
                    const std::size_t two[] = {i, j};
                    BOOST_TEST(run_split(text, two, expected) == "", "cuts at " << i << ", " << j);
                }
            }
        }

        if (expected.fail != npos) {
            corows::utf8_validator v;
            BOOST_TEST(v.write(text.first(expected.fail)));
            BOOST_TEST(!v.write(text.subspan(expected.fail, 1)));
            // Sticky: even valid bytes or nothing at all do not revive it.
            const std::uint8_t ascii[] = {'a'};
            BOOST_TEST(!v.write(ascii));
            BOOST_TEST(!v.write({}));
            BOOST_TEST(!v.finish());
        }
    }
}

struct table_case {
    const char* name;
    bytes text;
    verdict expected;
};

verdict valid()
{
    return {};
}
verdict incomplete()
{
    return {npos, false};
}
verdict fails_at(std::size_t i)
{
    return {i, false};
}

const std::vector<table_case>& table()
{
    static const std::vector<table_case> cases = {
        // Boundary code points (Kuhn 2.1-2.3).
        {"empty", {}, valid()},
        {"U+0000", {0x00}, valid()},
        {"U+007F", {0x7F}, valid()},
        {"U+0080", {0xC2, 0x80}, valid()},
        {"U+07FF", {0xDF, 0xBF}, valid()},
        {"U+0800", {0xE0, 0xA0, 0x80}, valid()},
        {"U+D7FF", {0xED, 0x9F, 0xBF}, valid()},
        {"U+E000", {0xEE, 0x80, 0x80}, valid()},
        {"U+FFFD", {0xEF, 0xBF, 0xBD}, valid()},
        {"U+FFFE noncharacter", {0xEF, 0xBF, 0xBE}, valid()},
        {"U+FFFF", {0xEF, 0xBF, 0xBF}, valid()},
        {"U+10000", {0xF0, 0x90, 0x80, 0x80}, valid()},
        {"U+10FFFF", {0xF4, 0x8F, 0xBF, 0xBF}, valid()},
        {"kosme", {0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5}, valid()},
        {"ascii", {'H', 'e', 'l', 'l', 'o', '-', 'U', 'T', 'F', '-', '8', '!'}, valid()},
        {"emoji", {0xF0, 0x9F, 0x98, 0x80, 0xF0, 0x9F, 0x91, 0x8D}, valid()},

        // Lone continuation bytes (Kuhn 3.1).
        {"lone 80", {0x80}, fails_at(0)},
        {"lone BF", {0xBF}, fails_at(0)},
        {"80 BF", {0x80, 0xBF}, fails_at(0)},
        {"ascii then 80", {'a', 'b', 0x80}, fails_at(2)},
        {"extra continuation after 2-byte", {0xC2, 0x80, 0x80}, fails_at(2)},
        {"extra continuation after 3-byte", {0xE0, 0xA0, 0x80, 0x80}, fails_at(3)},
        {"extra continuation after 4-byte", {0xF0, 0x90, 0x80, 0x80, 0xBF}, fails_at(4)},

        // Bytes that never appear (Kuhn 3.5).
        {"C0", {0xC0}, fails_at(0)},
        {"C1", {0xC1}, fails_at(0)},
        {"FE", {0xFE}, fails_at(0)},
        {"FF", {0xFF}, fails_at(0)},
        {"FE FE FF FF", {0xFE, 0xFE, 0xFF, 0xFF}, fails_at(0)},

        // Overlong '/' (Kuhn 4.1): caught at the lead byte for 2 bytes, at the first
        // continuation for 3 and 4, at the lead for the obsolete 5- and 6-byte forms.
        {"overlong / 2", {0xC0, 0xAF}, fails_at(0)},
        {"overlong / 3", {0xE0, 0x80, 0xAF}, fails_at(1)},
        {"overlong / 4", {0xF0, 0x80, 0x80, 0xAF}, fails_at(1)},
        {"overlong / 5", {0xF8, 0x80, 0x80, 0x80, 0xAF}, fails_at(0)},
        {"overlong / 6", {0xFC, 0x80, 0x80, 0x80, 0x80, 0xAF}, fails_at(0)},
        // Maximum overlongs (Kuhn 4.2).
        {"overlong U+007F", {0xC1, 0xBF}, fails_at(0)},
        {"overlong U+07FF", {0xE0, 0x9F, 0xBF}, fails_at(1)},
        {"overlong U+FFFF", {0xF0, 0x8F, 0xBF, 0xBF}, fails_at(1)},
        {"overlong U+1FFFFF 5", {0xF8, 0x87, 0xBF, 0xBF, 0xBF}, fails_at(0)},
        {"overlong U+3FFFFFF 6", {0xFC, 0x83, 0xBF, 0xBF, 0xBF, 0xBF}, fails_at(0)},
        // Overlong NUL (Kuhn 4.3).
        {"overlong NUL 2", {0xC0, 0x80}, fails_at(0)},
        {"overlong NUL 3", {0xE0, 0x80, 0x80}, fails_at(1)},
        {"overlong NUL 4", {0xF0, 0x80, 0x80, 0x80}, fails_at(1)},

        // Surrogates (Kuhn 5.1, 5.2), rejected at the byte after ED.
        {"U+D800", {0xED, 0xA0, 0x80}, fails_at(1)},
        {"U+DB7F", {0xED, 0xAD, 0xBF}, fails_at(1)},
        {"U+DB80", {0xED, 0xAE, 0x80}, fails_at(1)},
        {"U+DBFF", {0xED, 0xAF, 0xBF}, fails_at(1)},
        {"U+DC00", {0xED, 0xB0, 0x80}, fails_at(1)},
        {"U+DF80", {0xED, 0xBE, 0x80}, fails_at(1)},
        {"U+DFFF", {0xED, 0xBF, 0xBF}, fails_at(1)},
        {"surrogate pair", {0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80}, fails_at(1)},

        // Beyond U+10FFFF.
        {"U+110000", {0xF4, 0x90, 0x80, 0x80}, fails_at(1)},
        {"U+13FFFF", {0xF4, 0xBF, 0xBF, 0xBF}, fails_at(1)},
        {"U+140000", {0xF5, 0x80, 0x80, 0x80}, fails_at(0)},
        {"U+1FFFFF", {0xF7, 0xBF, 0xBF, 0xBF}, fails_at(0)},
        {"5-byte U+200000", {0xF8, 0x88, 0x80, 0x80, 0x80}, fails_at(0)},

        // Autobahn 6.3/6.4: valid text, then the byte that breaks it, then more text.
        {"kosme + surrogate + edited",
         {0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80, 0x65, 0x64, 0x69,
          0x74, 0x65, 0x64},
         fails_at(12)},
        {"kosme + U+110000 + edited",
         {0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xF4, 0x90, 0x80, 0x80, 0x65, 0x64,
          0x69, 0x74, 0x65, 0x64},
         fails_at(12)},
        {"kosme + lone 80", {0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0x80}, fails_at(11)},

        // Incomplete sequences followed by something that cannot continue them (Kuhn 3.3).
        {"C2 then ascii", {0xC2, 0x41}, fails_at(1)},
        {"E0 A0 then ascii", {0xE0, 0xA0, 0x41}, fails_at(2)},
        {"E1 then ascii", {0xE1, 0x41}, fails_at(1)},
        {"F0 90 80 then ascii", {0xF0, 0x90, 0x80, 0x41}, fails_at(3)},
        {"F1 80 then lead", {0xF1, 0x80, 0xC2, 0x80}, fails_at(2)},
        {"E1 80 then lead", {0xE1, 0x80, 0xC2, 0x80}, fails_at(2)},
        {"DF then lead", {0xDF, 0xDF, 0xBF}, fails_at(1)},
        {"C2 then C0", {0xC2, 0xC0}, fails_at(1)},
        {"concatenated truncations (Kuhn 3.4)",
         {0xC0, 0xE0, 0x80, 0xF0, 0x80, 0x80, 0xDF, 0xEF, 0xBF, 0xF7, 0xBF, 0xBF},
         fails_at(0)},

        // Truncated at the end: every write succeeds, finish() does not.
        {"C2 at end", {0xC2}, incomplete()},
        {"DF at end", {0xDF}, incomplete()},
        {"E0 at end", {0xE0}, incomplete()},
        {"E0 A0 at end", {0xE0, 0xA0}, incomplete()},
        {"ED 9F at end", {0xED, 0x9F}, incomplete()},
        {"EF BF at end", {0xEF, 0xBF}, incomplete()},
        {"F0 at end", {0xF0}, incomplete()},
        {"F0 90 80 at end", {0xF0, 0x90, 0x80}, incomplete()},
        {"F4 8F BF at end", {0xF4, 0x8F, 0xBF}, incomplete()},
        {"kosme + E1 BD at end", {0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xE1, 0xBD},
         incomplete()},
    };
    return cases;
}

void append(bytes& out, std::span<const std::uint8_t> b)
{
    out.insert(out.end(), b.begin(), b.end());
}

void append(bytes& out, std::string_view s)
{
    out.insert(out.end(), s.begin(), s.end());
}

} // namespace

BOOST_AUTO_TEST_SUITE(utf8)

BOOST_AUTO_TEST_CASE(validator_is_small_and_trivially_copyable)
{
    BOOST_TEST(std::is_trivially_copyable_v<corows::utf8_validator>);
    BOOST_TEST(sizeof(corows::utf8_validator) <= 8u);
}

BOOST_AUTO_TEST_CASE(reference_decoder_is_sound)
{
    // The reference itself must agree with a few facts before it can judge anything.
    const auto& r = reference();
    BOOST_TEST(r.size() == 0x110000u - 0x800u);
    BOOST_TEST(r.sorted());
    BOOST_TEST((r.check(bytes{0xF4, 0x8F, 0xBF, 0xBF}) == valid()));
    BOOST_TEST((r.check(bytes{0xF4, 0x90}) == fails_at(1)));
    BOOST_TEST((r.check(bytes{0xE0, 0x80}) == fails_at(1)));
    BOOST_TEST((r.check(bytes{0xED, 0xA0}) == fails_at(1)));
    BOOST_TEST((r.check(bytes{0xC1}) == fails_at(0)));
    BOOST_TEST((r.check(bytes{'a', 0xE0, 0xA0}) == incomplete()));
}

BOOST_AUTO_TEST_CASE(table_of_sequences)
{
    for (const table_case& c : table()) {
        BOOST_TEST_CONTEXT(c.name)
        {
            // The table and the reference must agree, so neither can be wrong on its own.
            BOOST_TEST((reference().check(c.text) == c.expected));
            check_all_splits(c.text, c.expected);
        }
    }
}

BOOST_AUTO_TEST_CASE(table_at_every_alignment)
{
    // The same sequences after 0..70 ASCII bytes (and followed by ASCII when complete), so
    // the failing byte sits at every offset relative to the fast path's blocks.
    for (const table_case& c : table()) {
        for (std::size_t pad = 0; pad <= 70; ++pad) {
            bytes text(pad, 'x');
            append(text, c.text);
            verdict expected = c.expected;
            if (expected.fail != npos) {
                expected.fail += pad;
                append(text, "trailing ascii after the failure");
            } else if (expected.complete) {
                append(text, "and more ascii text after it, long enough for a block");
            }
            BOOST_TEST_CONTEXT(c.name << " after " << pad << " ascii")
            {
                BOOST_TEST(run_split(text, {}, expected) == "");
                if (expected.fail != npos) {
                    corows::utf8_validator v;
                    BOOST_TEST(v.write(std::span(text).first(expected.fail)));
                    BOOST_TEST(!v.write(std::span(text).subspan(expected.fail, 1)));
                }
                const std::size_t mid[] = {text.size() / 2};
                BOOST_TEST(run_split(text, mid, expected) == "");
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(every_invalid_lead_byte)
{
    for (unsigned b = 0x80; b <= 0xFF; ++b) {
        const bool can_lead = (b >= 0xC2 && b <= 0xF4);
        const bytes text{static_cast<std::uint8_t>(b)};
        check_all_splits(text, can_lead ? incomplete() : fails_at(0));
    }
}

BOOST_AUTO_TEST_CASE(every_scalar_value)
{
    // Each scalar value alone, then each after a 2-byte character, written whole.
    std::size_t wrong = 0;
    for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            continue;
        }
        bytes text = encode(cp);
        corows::utf8_validator v;
        if (!v.write(text) || !v.finish()) {
            ++wrong;
        }
        text.insert(text.begin(), {0xC3, 0xA9});
        if (!corows::is_valid_utf8(text)) {
            ++wrong;
        }
    }
    BOOST_TEST(wrong == 0u);
}

BOOST_AUTO_TEST_CASE(every_surrogate_fails_at_second_byte)
{
    for (std::uint32_t cp = 0xD800; cp <= 0xDFFF; ++cp) {
        const bytes text = encode_raw(cp, 3);
        corows::utf8_validator v;
        BOOST_TEST(v.write(std::span(text).first(1)));
        BOOST_TEST(!v.write(std::span(text).subspan(1, 1)), std::hex << cp);
    }
}

BOOST_AUTO_TEST_CASE(every_overlong_fails_at_its_first_proof)
{
    // 2-byte overlongs (C0, C1 leads) fail at once; 3- and 4-byte ones at the first
    // continuation, which is where the missing high bits show.
    std::size_t wrong = 0;
    std::size_t checked = 0;
    for (std::uint32_t cp = 0; cp < 0x10000; ++cp) {
        for (int len = shortest_length(cp) + 1; len <= 4; ++len) {
            const bytes text = encode_raw(cp, len);
            const std::size_t fail = len == 2 ? 0 : 1;
            corows::utf8_validator v;
            if (!v.write(std::span(text).first(fail)) || v.write(std::span(text).subspan(fail, 1))) {
                ++wrong;
            }
            ++checked;
        }
    }
    BOOST_TEST(checked == 128u * 3 + (0x800u - 0x80u) * 2 + (0x10000u - 0x800u));
    BOOST_TEST(wrong == 0u);
}

BOOST_AUTO_TEST_CASE(every_code_point_beyond_max_fails)
{
    // F4 90.. fails at the second byte; F5..F7 leads at the first.
    std::size_t wrong = 0;
    for (std::uint32_t cp = 0x110000; cp <= 0x1FFFFF; ++cp) {
        const bytes text = encode_raw(cp, 4);
        const std::size_t fail = text[0] == 0xF4 ? 1 : 0;
        corows::utf8_validator v;
        if (!v.write(std::span(text).first(fail)) || v.write(std::span(text).subspan(fail, 1))) {
            ++wrong;
        }
    }
    BOOST_TEST(wrong == 0u);
}

BOOST_AUTO_TEST_CASE(every_two_byte_string_matches_reference)
{
    // All 65,536 two-byte strings, each also followed by a third byte from
    // every class the validator must tell apart.
    const std::uint8_t thirds[] = {0x41, 0x8F, 0x90, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF4, 0xF5};
    std::size_t mismatches = 0;
    std::string first;
    for (unsigned a = 0; a < 256; ++a) {
        for (unsigned b = 0; b < 256; ++b) {
            for (int t = -1; t < static_cast<int>(std::size(thirds)); ++t) {
                bytes text{static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b)};
                if (t >= 0) {
                    text.push_back(thirds[t]);
                }
                const verdict want = reference().check(text);
                std::vector<std::size_t> cuts;
                for (std::size_t i = 1; i < text.size(); ++i) {
                    cuts.push_back(i);
                }
                std::string err = run_split(text, {}, want);
                if (err.empty()) {
                    err = run_split(text, cuts, want);
                }
                if (!err.empty()) {
                    if (mismatches++ == 0) {
                        first = hex(text) + ": " + err;
                    }
                }
            }
        }
    }
    BOOST_TEST(mismatches == 0u, "first: " << first);
}

BOOST_AUTO_TEST_CASE(random_differential_against_reference)
{
    std::mt19937 rng(0x5EED'0FF8u);
    auto pick = [&rng](std::uint32_t lo, std::uint32_t hi) {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
    };
    // Code points drawn near every length and range boundary, not just uniformly.
    const std::uint32_t anchors[] = {0x0,    0x7F,   0x80,    0x7FF,   0x800,    0xD7FF,
                                     0xE000, 0xFFFF, 0x10000, 0xFFFFF, 0x10FFFF, 0x3B1};

    auto next_text = [&]() {
        bytes text;
        const std::uint32_t pieces = pick(0, 24);
        for (std::uint32_t k = 0; k < pieces; ++k) {
            const std::uint32_t kind = pick(0, 99);
            if (kind < 30) {
                text.insert(text.end(), pick(1, 40), static_cast<std::uint8_t>(pick(0x20, 0x7E)));
            } else if (kind < 70) {
                std::uint32_t cp = 0;
                switch (pick(0, 4)) {
                case 0: cp = pick(0x80, 0x7FF); break;
                case 1: cp = pick(0x800, 0xFFFF); break;
                case 2: cp = pick(0x10000, 0x10FFFF); break;
                case 3: cp = anchors[pick(0, std::size(anchors) - 1)] + pick(0, 2) - 1; break;
                default: cp = pick(0, 0x10FFFF); break;
                }
                cp = std::min<std::uint32_t>(cp, 0x10FFFF);
                const bytes e = encode_raw(cp, shortest_length(cp));
                append(text, e);
            } else if (kind < 78) {
                // A truncated encoding.
                const bytes e = encode(pick(0x80, 0x10FFFF) | 0x80);
                append(text, std::span(e).first(pick(1, static_cast<std::uint32_t>(e.size()) - 1)));
            } else if (kind < 84) {
                text.push_back(static_cast<std::uint8_t>(pick(0, 255)));
            } else if (kind < 88) {
                const bytes e = encode_raw(pick(0xD800, 0xDFFF), 3);
                append(text, e);
            } else if (kind < 92) {
                const std::uint32_t cp = pick(0, 0xFFFF);
                const bytes e = encode_raw(cp, std::min(4, shortest_length(cp) + static_cast<int>(pick(1, 2))));
                append(text, e);
            } else if (kind < 95) {
                const bytes e = encode_raw(pick(0x110000, 0x1FFFFF), 4);
                append(text, e);
            } else {
                text.push_back(static_cast<std::uint8_t>(pick(0x80, 0xBF)));
            }
        }
        return text;
    };

    std::size_t counts[3] = {};
    std::size_t mismatches = 0;
    std::string first;
    constexpr int iterations = 40000;
    for (int iter = 0; iter < iterations; ++iter) {
        bytes text = next_text();
        if (iter % 4 < 2) {
            // Cut at the reference's first failure and back to a complete character, so a
            // quarter of the corpus is long valid text and another quarter ends mid-character.
            const verdict v = reference().check(text);
            if (v.fail != npos) {
                text.resize(v.fail);
            }
            while (!reference().check(text).valid()) {
                text.pop_back();
            }
            if (iter % 4 == 1) {
                const bytes e = encode(pick(0x80, 0x10FFFF) | 0x80);
                append(text, std::span(e).first(pick(1, static_cast<std::uint32_t>(e.size()) - 1)));
            }
        }
        const verdict want = reference().check(text);
        ++counts[want.fail != npos ? 2 : want.complete ? 0 : 1];

        std::vector<std::size_t> cuts;
        for (std::size_t i = 1; i < text.size(); ++i) {
            if (pick(0, 3) == 0) {
                cuts.push_back(i);
            }
        }
        std::string err = run_split(text, {}, want);
        if (err.empty()) {
            err = run_split(text, cuts, want);
        }
        if (err.empty() && want.fail != npos) {
            corows::utf8_validator v;
            if (!v.write(std::span(text).first(want.fail)) || v.write(std::span(text).subspan(want.fail, 1))) {
                err = "failing byte not pinpointed";
            }
        }
        if (!err.empty() && mismatches++ == 0) {
            std::ostringstream os;
            os << hex(text) << " (" << want << "): " << err;
            first = os.str();
        }
    }
    BOOST_TEST(mismatches == 0u, "first: " << first);
    // The generator must exercise all three outcomes in bulk, or the test proves little.
    BOOST_TEST(counts[0] > iterations / 4u);
    BOOST_TEST(counts[1] > iterations / 5u);
    BOOST_TEST(counts[2] > iterations / 4u);
}

namespace {

// About 100 KB of text in several scripts, with ASCII runs of every length from 1 to 97 so
// the fast path starts and stops at every alignment.
bytes multilingual_text()
{
    const std::string_view words[] = {
        "\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5",                         // Greek
        "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",                     // Russian
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",                                 // Japanese
        "\xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9",             // Arabic
        "\xF0\x9F\x98\x80\xF0\x9F\x8E\x89",                                     // emoji
        "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80", // Hindi
        "\xC3\xA9t\xC3\xA9",                                                    // French
        "\xF4\x8F\xBF\xBF\xEF\xBF\xBF\xED\x9F\xBF\xEE\x80\x80",                  // boundaries
    };
    const std::string_view ascii =
        "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789";
    bytes text;
    std::size_t run = 1;
    std::size_t w = 0;
    while (text.size() < 100000) {
        append(text, ascii.substr(0, run));
        append(text, words[w]);
        run = run % 97 + 1;
        w = (w + 3) % std::size(words);
    }
    return text;
}

} // namespace

BOOST_AUTO_TEST_CASE(long_multilingual_text)
{
    const bytes text = multilingual_text();
    BOOST_TEST_REQUIRE(reference().check(text).valid());

    // Every starting alignment, whole and in chunks of awkward sizes.
    for (std::size_t shift = 0; shift < 32; ++shift) {
        bytes padded(shift, ' ');
        append(padded, text);
        BOOST_TEST(corows::is_valid_utf8(padded));
        for (std::size_t chunk : {1u, 3u, 7u, 15u, 16u, 17u, 31u, 33u, 64u, 1000u, 4099u}) {
            corows::utf8_validator v;
            bool ok = true;
            for (std::size_t i = 0; i < padded.size(); i += chunk) {
                ok = v.write(std::span(padded).subspan(i, std::min(chunk, padded.size() - i))) && ok;
            }
            BOOST_TEST((ok && v.finish()), "shift " << shift << " chunk " << chunk);
        }
    }
}

namespace {

bool is_continuation(std::uint8_t b)
{
    return (b & 0xC0) == 0x80;
}

// The reference verdict for `original` (valid) with only byte `pos` changed, without
// re-walking 100 KB: the text is valid up to the character boundary before `pos`, and once
// the reference is past `pos` and between characters where the original also has a
// boundary, the rest is the original's valid tail.
verdict reference_one_change(const bytes& original, const bytes& corrupt, std::size_t pos)
{
    std::size_t b = pos;
    while (b > 0 && is_continuation(original[b])) {
        --b;
    }
    for (std::size_t e = pos + 1;; ++e) {
        const verdict v = reference().check(std::span(corrupt).subspan(b, e - b));
        if (v.fail != npos) {
            return fails_at(b + v.fail);
        }
        if (e == corrupt.size()) {
            return v;
        }
        if (v.complete && !is_continuation(corrupt[e])) {
            return valid();
        }
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(long_text_with_one_bad_byte)
{
    // Corrupt one byte at many positions (ASCII runs and multibyte characters alike) and
    // check the reported position matches the reference exactly.
    const bytes text = multilingual_text();
    const std::uint8_t bad_bytes[] = {0x80, 0xBF, 0xC0, 0xF5, 0xFF, 0xED, 0xC2};
    std::size_t mismatches = 0;
    std::size_t detected = 0;
    std::string first;
    for (std::size_t pos = 0; pos < 6000; pos += 1) {
        bytes corrupt = text;
        corrupt[pos] = bad_bytes[pos % std::size(bad_bytes)];
        const verdict want = reference_one_change(text, corrupt, pos);
        if (want.fail == npos) {
            continue;
        }
        ++detected;
        std::string err = run_split(corrupt, {}, want);
        if (err.empty()) {
            corows::utf8_validator v;
            if (!v.write(std::span(corrupt).first(want.fail)) ||
                v.write(std::span(corrupt).subspan(want.fail, 1))) {
                err = "failing byte not pinpointed";
            }
        }
        if (!err.empty() && mismatches++ == 0) {
            first = "corrupted at " + std::to_string(pos) + ": " + err;
        }
    }
    BOOST_TEST(detected > 5000u);
    BOOST_TEST(mismatches == 0u, "first: " << first);
}

BOOST_AUTO_TEST_CASE(finish_reset_and_copy)
{
    corows::utf8_validator v;
    BOOST_TEST(v.finish());
    BOOST_TEST(v.write({}));
    BOOST_TEST(v.finish());

    const std::uint8_t lead[] = {0xE2, 0x82};
    const std::uint8_t tail[] = {0xAC};
    BOOST_TEST(v.write(lead));
    BOOST_TEST(!v.finish());
    BOOST_TEST(v.write({}));
    BOOST_TEST(!v.finish());

    // A copy carries the pending sequence and then evolves independently.
    corows::utf8_validator copy = v;
    BOOST_TEST(copy.write(tail));
    BOOST_TEST(copy.finish());
    const std::uint8_t bad[] = {0x41};
    BOOST_TEST(!v.write(bad));
    BOOST_TEST(!v.finish());
    BOOST_TEST(copy.finish());

    v.reset();
    BOOST_TEST(v.finish());
    const std::uint8_t euro[] = {0xE2, 0x82, 0xAC};
    BOOST_TEST(v.write(euro));
    BOOST_TEST(v.finish());

    // reset() also forgets an incomplete sequence.
    BOOST_TEST(v.write(lead));
    v.reset();
    BOOST_TEST(v.write(bad));
    BOOST_TEST(v.finish());
}

BOOST_AUTO_TEST_CASE(is_valid_utf8_needs_completeness)
{
    const std::uint8_t truncated[] = {'o', 'k', 0xF0, 0x9F, 0x98};
    const std::uint8_t whole[] = {'o', 'k', 0xF0, 0x9F, 0x98, 0x80};
    BOOST_TEST(!corows::is_valid_utf8(truncated));
    BOOST_TEST(corows::is_valid_utf8(whole));
    BOOST_TEST(corows::is_valid_utf8({}));
}

BOOST_AUTO_TEST_SUITE_END()
