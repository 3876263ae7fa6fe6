// SPDX-License-Identifier: BSL-1.0
#include <corows/byte_buffer.hpp>
#include <corows/detail/shared_compressor.hpp>
#include <corows/detail/shared_inflater.hpp>
#include <corows/error.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/message_writer.hpp>

#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

namespace {

using bytes = std::vector<std::uint8_t>;

bytes str(std::string_view s) { return bytes(s.begin(), s.end()); }

std::string text(std::mt19937& rng, std::size_t size) {
    static const char* const words[] = {"alpha", "beta", "gamma", "delta", "\"id\":", "{", "}", ","};
    std::string s;
    while (s.size() < size) s += words[rng() % 8] + std::to_string(rng() % 300);
    s.resize(size);
    return s;
}

// The wire of `messages` sent by a server writer whose direction has no context takeover.
bytes wire_of(const std::vector<std::string>& messages, std::size_t frame_size, bool libdeflate) {
    corows::message_writer w(corows::writer_config{corows::role::server, frame_size});
    corows::deflate_config d;
    d.send.no_context_takeover = true;
    d.threshold = 0;
    d.use_libdeflate = libdeflate;
    w.enable_deflate(d);
    corows::byte_buffer out;
    for (const auto& m : messages) {
        BOOST_TEST_REQUIRE(!w.append_message(out, corows::message_kind::text, str(m), true));
        BOOST_TEST_REQUIRE(!w.deflater_allocated());
    }
    return bytes(out.data().begin(), out.data().end());
}

// A reader fed the way the Asio layer feeds it: the bytes arrive in the pieces `cuts` gives.
class fed_reader {
public:
    fed_reader() : reader_(corows::reader_config{corows::role::client, 1 << 20}) {
        reader_.enable_deflate({15, true});
    }

    // Appends `piece` and reads every complete event; returns the messages it completed.
    std::vector<std::string> feed(std::span<const std::uint8_t> piece) {
        std::vector<std::string> got;
        buf_.consume(pos_);
        pos_ = 0;
        buf_.append(piece);
        for (;;) {
            auto r = reader_.read(buf_.data(), pos_, msg_);
            if (r.event == corows::read_event::need_more) break;
            if (r.event == corows::read_event::progress) continue;
            BOOST_TEST_REQUIRE((r.event == corows::read_event::message), r.ec.message());
            got.push_back(msg_.str());
            // Nothing of a finished message stays with the connection.
            BOOST_TEST(!reader_.inflater_allocated());
        }
        return got;
    }

    bool holds_inflater() const { return reader_.inflater_allocated(); }

private:
    corows::message_reader reader_;
    corows::byte_buffer buf_;
    std::size_t pos_ = 0;
    corows::message msg_;
};

// What a fresh inflater of the peer's window makes of one whole payload.
std::error_code zlib_alone(std::span<const std::uint8_t> payload, int bits, corows::byte_buffer& out,
                           std::size_t limit) {
    corows::inflate_stream in(bits, true);
    auto ec = in.write(payload, out, limit);
    if (!ec) ec = in.finish(out, limit);
    return ec;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_inflater)

BOOST_AUTO_TEST_CASE(rfc_hello) {
    corows::byte_buffer out;
    const bytes hello{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    for (int i = 0; i < 3; ++i) {
        out.clear();
        BOOST_TEST(!corows::detail::inflate_shared(hello, 15, out, 100));
        BOOST_TEST(out.view() == "Hello");
    }
    // §7.2.3.4: the same message in a BFINAL block.
    out.clear();
    BOOST_TEST(!corows::detail::inflate_shared(bytes{0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}, 15, out, 100));
    BOOST_TEST(out.view() == "Hello");
}

// A failed message leaves the shared inflater clean for the next connection's message.
BOOST_AUTO_TEST_CASE(errors_leave_it_clean) {
    const bytes hello{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    corows::byte_buffer out;
    BOOST_TEST((corows::detail::inflate_shared(bytes{0xff, 0xff, 0xff}, 15, out, 100) ==
                make_error_code(corows::error::inflate_failed)));
    // Stopped inside a block.
    out.clear();
    BOOST_TEST((corows::detail::inflate_shared(bytes{0xf2, 0x48, 0xcd}, 15, out, 100) ==
                make_error_code(corows::error::inflate_failed)));
    out.clear();
    bytes zeros(100000, 0);
    corows::deflate_stream d(15, true);
    std::error_code ec;
    auto bomb = d.compress(zeros, ec);
    BOOST_TEST((corows::detail::inflate_shared(bomb, 15, out, 1000) ==
                make_error_code(corows::error::message_too_big)));
    out.clear();
    BOOST_TEST(!corows::detail::inflate_shared(hello, 15, out, 100));
    BOOST_TEST(out.view() == "Hello");
}

// §7.2.3.4: a BFINAL block may end the stream inside a message, which then goes on.
BOOST_AUTO_TEST_CASE(final_block_inside_a_message) {
    const bytes twice{0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00};
    corows::byte_buffer out;
    BOOST_TEST(!corows::detail::inflate_shared(twice, 15, out, 100));
    BOOST_TEST(out.view() == "HelloHello");
}

// Outputs far beyond the output space first asked for (runs of one byte compress ~1000x), and
// limits at, just under and just over the size: the same answers as an inflater of its own.
BOOST_AUTO_TEST_CASE(large_outputs_and_limits_around_them) {
    for (std::size_t size : {std::size_t{1000}, std::size_t{5000}, std::size_t{40000}, std::size_t{300000}}) {
        bytes run(size, 'a');
        corows::deflate_stream d(15, true);
        std::error_code ec;
        auto payload = d.compress(run, ec);
        BOOST_TEST_REQUIRE(!ec);
        for (std::size_t limit : {size - 1, size, size + 2, size + 100, std::size_t{1} << 20}) {
            corows::byte_buffer got, want;
            auto ec_got = corows::detail::inflate_shared(payload, 15, got, limit);
            auto ec_want = zlib_alone(payload, 15, want, limit);
            BOOST_TEST(ec_got == ec_want, "size " << size << " limit " << limit);
            BOOST_TEST(ec_got.value() == (limit < size ? static_cast<int>(corows::error::message_too_big) : 0));
            if (!ec_got) BOOST_TEST((got.view() == want.view()));
        }
    }
}

// Two messages at every split point of the wire: a message whose bytes are all in one read
// goes through the shared inflater; one cut by the split gets its own stream, which is gone
// once the message is complete. Another reader uses the shared inflater between the pieces.
BOOST_AUTO_TEST_CASE(every_split_point) {
    std::mt19937 rng(5);
    for (bool lib : {false, true})
        for (std::size_t frame_size : {std::size_t{0}, std::size_t{40}}) {
            std::vector<std::string> msgs{text(rng, 300), text(rng, 500)};
            bytes wire = wire_of(msgs, frame_size, lib);
            std::vector<std::string> other_msgs{text(rng, 700)};
            bytes other = wire_of(other_msgs, 0, lib);
            for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
                fed_reader r;
                fed_reader bystander;
                auto got = r.feed({wire.data(), cut});
                BOOST_TEST(bystander.feed(other) == other_msgs);
                auto rest = r.feed({wire.data() + cut, wire.size() - cut});
                got.insert(got.end(), rest.begin(), rest.end());
                BOOST_TEST_REQUIRE(got == msgs, "cut at " << cut);
                BOOST_TEST(!r.holds_inflater());
            }
        }
}

// Random messages in random pieces, three readers interleaved on one thread.
BOOST_AUTO_TEST_CASE(random_pieces_interleaved) {
    std::mt19937 rng(9);
    for (int round = 0; round < 20; ++round) {
        std::vector<std::string> msgs[3];
        bytes wires[3];
        std::size_t offsets[3] = {0, 0, 0};
        std::vector<std::string> got[3];
        fed_reader readers[3];
        for (int i = 0; i < 3; ++i) {
            for (int k = 0; k < 10; ++k) msgs[i].push_back(text(rng, rng() % 3000));
            wires[i] = wire_of(msgs[i], rng() % 2 ? 0 : 100 + rng() % 500, rng() % 2);
        }
        for (bool more = true; more;) {
            more = false;
            for (int i = 0; i < 3; ++i) {
                std::size_t n = std::min<std::size_t>(1 + rng() % 2000, wires[i].size() - offsets[i]);
                auto part = readers[i].feed({wires[i].data() + offsets[i], n});
                offsets[i] += n;
                got[i].insert(got[i].end(), part.begin(), part.end());
                more = more || offsets[i] < wires[i].size();
            }
        }
        for (int i = 0; i < 3; ++i) BOOST_TEST_REQUIRE((got[i] == msgs[i]));
    }
}

BOOST_AUTO_TEST_SUITE_END()
