// SPDX-License-Identifier: BSL-1.0
// prepared_message: a broadcast framed once (RFC 6455 §5.2, §5.7) and compressed once per
// window size (RFC 7692 §7.2.1), safely from several threads.
#include <corows/prepared_message.hpp>
#include <corows/protocol/inflate_stream.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <vector>

namespace {

using corows::byte_buffer;
using corows::message_kind;
using bytes = std::vector<std::uint8_t>;

bytes to_bytes(std::span<const std::uint8_t> s) { return bytes(s.begin(), s.end()); }

std::span<const std::uint8_t> as_span(const std::string& s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// JSON-ish text that compresses, different for every `seed`.
std::string sample_text(std::size_t size, unsigned seed) {
    std::string s;
    while (s.size() < size) s += "{\"user\":" + std::to_string(seed++ * 7919 % 1000) + ",\"text\":\"hello there\"},";
    s.resize(size);
    return s;
}

// The payload of a compressed frame with a 1- or 3-byte length (under 64 KiB), inflated with
// exactly `window_bits` and no context takeover.
std::string inflate_frame(std::span<const std::uint8_t> frame, int window_bits) {
    std::size_t header = (frame[1] & 0x7F) == 126 ? 4 : 2;
    corows::inflate_stream in(window_bits, true);
    byte_buffer out;
    auto ec = in.write(frame.subspan(header), out, 1 << 20);
    if (!ec) ec = in.finish(out, 1 << 20);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    return std::string(out.view());
}

} // namespace

BOOST_AUTO_TEST_SUITE(prepared_message)

BOOST_AUTO_TEST_CASE(frames_match_the_rfc_examples) {
    std::string hello = "Hello";
    corows::prepared_message pm(as_span(hello), message_kind::text);
    // RFC 6455 §5.7: a single-frame unmasked text message.
    BOOST_TEST(to_bytes(pm.frame()) == (bytes{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}), boost::test_tools::per_element());
    BOOST_TEST(to_bytes(pm.payload()) == to_bytes(as_span(hello)), boost::test_tools::per_element());
    BOOST_TEST((pm.kind() == message_kind::text));

    // RFC 6455 §5.7: 256 bytes of binary data in a single unmasked frame, and the 64-bit form.
    bytes b256(256, 0xAB);
    corows::prepared_message p256(b256, message_kind::binary);
    BOOST_TEST(to_bytes(p256.frame().first(4)) == (bytes{0x82, 0x7E, 0x01, 0x00}), boost::test_tools::per_element());
    BOOST_TEST(p256.frame().size() == 260u);
    bytes b64k(65536, 0x01);
    corows::prepared_message p64k(b64k, message_kind::binary);
    BOOST_TEST(to_bytes(p64k.frame().first(10)) == (bytes{0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}),
               boost::test_tools::per_element());

    corows::prepared_message empty(std::span<const std::uint8_t>{}, message_kind::binary);
    BOOST_TEST(to_bytes(empty.frame()) == (bytes{0x82, 0x00}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(deflated_frames_inflate_under_their_own_window) {
    for (std::size_t size : {std::size_t{5}, std::size_t{200}, std::size_t{4000}, std::size_t{20000}}) {
        std::string text = sample_text(size, static_cast<unsigned>(size));
        corows::prepared_message pm(as_span(text), message_kind::text);
        for (int bits = 8; bits <= 15; ++bits) {
            auto f = pm.deflated_frame(bits);
            BOOST_REQUIRE(!f.empty());
            BOOST_TEST(f[0] == 0xC1); // FIN, RSV1, text
            BOOST_TEST((f[1] & 0x80) == 0); // a server frame: unmasked
            BOOST_TEST(inflate_frame(f, bits) == text, "size " << size << " window " << bits);
            // Built once: the same bytes every time.
            BOOST_TEST(pm.deflated_frame(bits).data() == f.data());
        }
        // Out-of-range sizes are clamped, not refused.
        BOOST_TEST(pm.deflated_frame(7).data() == pm.deflated_frame(8).data());
        BOOST_TEST(pm.deflated_frame(16).data() == pm.deflated_frame(15).data());
    }
    std::string repetitive(3000, 'a');
    corows::prepared_message pm(as_span(repetitive), message_kind::text);
    BOOST_TEST(pm.deflated_frame(15).size() < 100u); // really compressed
}

BOOST_AUTO_TEST_CASE(threads_compressing_at_once_share_one_result) {
    std::string text = sample_text(8000, 3);
    corows::prepared_message pm(as_span(text), message_kind::binary);
    std::vector<const std::uint8_t*> seen(8);
    // std::thread, not std::jthread: libc++ 16 has no jthread.
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < seen.size(); ++i)
        threads.emplace_back([&, i] { seen[i] = pm.deflated_frame(15).data(); });
    for (auto& t : threads) t.join();
    for (auto* p : seen) BOOST_TEST(p == seen[0]);
    BOOST_TEST(inflate_frame(pm.deflated_frame(15), 15) == text);
}

BOOST_AUTO_TEST_SUITE_END()
