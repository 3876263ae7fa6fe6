// SPDX-License-Identifier: BSL-1.0
// Broadcast with prepared messages: websocket::send() and write_prepared() to connections of
// every kind (plain, compressed with and without context takeover, other window sizes,
// fragmenting, client role), shared by reference, refused when the queue is full.
#include "loopback.hpp"

#include <corows/prepared_message.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace {

using namespace corows::test;
using corows::message;
using corows::message_kind;
using corows::options;
using corows::prepared_message;

// Message `i` of a broadcast: sizes around every length-encoding edge, text and binary,
// compressible and not.
std::string nth_payload(std::size_t i) {
    static const std::size_t sizes[] = {0, 1, 63, 64, 125, 126, 1000, 65535, 65536, 70000};
    std::size_t size = sizes[i % std::size(sizes)] + i / std::size(sizes);
    std::string s;
    s.reserve(size);
    for (std::size_t k = 0; s.size() < size; ++k)
        s += i % 3 == 0 ? static_cast<char>('a' + (k * 7 + i) % 26) : static_cast<char>("{\"n\":1}"[k % 7]);
    s.resize(size);
    return s;
}
message_kind nth_kind(std::size_t i) { return i % 2 ? message_kind::binary : message_kind::text; }

std::shared_ptr<const prepared_message> nth_prepared(std::size_t i) {
    std::string p = nth_payload(i);
    return prepared_message::make(corows::as_bytes(p), nth_kind(i));
}

// One receiving connection's settings: what the client asks for, what the server imposes.
struct variant {
    std::string name;
    options client;
    options server;
};

std::vector<variant> variants() {
    std::vector<variant> v;
    v.push_back({"plain", {}, {}});
    options c, srv;
    srv.deflate.enabled = true;
    c.deflate.enabled = true;
    c.deflate.server_no_context_takeover = true;
    v.push_back({"deflate, no context takeover", c, srv});
    c.deflate.server_max_window_bits = 9;
    v.push_back({"deflate, no context takeover, window 9", c, srv});
    options takeover;
    takeover.deflate.enabled = true;
    v.push_back({"deflate, context takeover", takeover, srv});
    options fragmenting;
    fragmenting.frame_size = 100;
    v.push_back({"fragmenting server", {}, fragmenting});
    return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(broadcast)

BOOST_AUTO_TEST_CASE(every_kind_of_connection_receives_every_prepared_message) {
    constexpr std::size_t count = 120;
    auto vs = variants();
    loop l;
    std::vector<std::size_t> received(vs.size(), 0);
    l.spawn("server", [&]() -> asio::awaitable<void> {
        std::vector<tcp_ws> conns;
        for (const auto& v : vs) {
            conns.push_back(co_await l.accept_ws(v.server));
            co_await conns.back().accept();
        }
        for (std::size_t i = 0; i < count; ++i) {
            auto pm = nth_prepared(i);
            // Half of them without waiting, while the queues have room.
            for (auto& ws : conns) {
                if (i % 2 == 0 && ws.queued_bytes() < 256 * 1024) BOOST_REQUIRE(ws.send(pm));
                else co_await ws.write_prepared(pm);
            }
        }
        for (auto& ws : conns) co_await ws.close(1000, "done");
    });
    for (std::size_t k = 0; k < vs.size(); ++k) {
        l.spawn("client " + vs[k].name, [&, k]() -> asio::awaitable<void> {
            tcp_ws ws = co_await l.connect_ws(vs[k].client);
            co_await ws.handshake(l.host(), "/");
            message m;
            while (co_await ws.read_message(m)) {
                std::size_t i = received[k]++;
                BOOST_REQUIRE_MESSAGE(m.str() == nth_payload(i), vs[k].name << ": message " << i << " differs");
                BOOST_REQUIRE_MESSAGE((m.kind() == nth_kind(i)), vs[k].name << ": message " << i << " kind");
                // The compressed variants did receive compressed messages (sizes from 64 up).
                if (vs[k].client.deflate.enabled && m.size() >= 64)
                    BOOST_REQUIRE_MESSAGE(m.compressed(), vs[k].name << ": message " << i << " not compressed");
            }
            BOOST_TEST(ws.close_code() == 1000);
        });
    }
    l.run(std::chrono::seconds(60));
    for (std::size_t k = 0; k < vs.size(); ++k) BOOST_TEST(received[k] == count, vs[k].name);
}

BOOST_AUTO_TEST_CASE(a_client_sends_prepared_messages_masked) {
    constexpr std::size_t count = 40;
    std::size_t received = 0;
    run_pair(options{}, options{},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            // A masking violation would fail this read with 1002.
            message m;
            while (co_await ws.read_message(m)) {
                BOOST_REQUIRE(m.str() == nth_payload(received));
                ++received;
            }
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            for (std::size_t i = 0; i < count; ++i) co_await ws.write_prepared(nth_prepared(i));
            co_await ws.close(1000, {});
        });
    BOOST_TEST(received == count);
}

// A client without context takeover sends the prepared message's compressed bytes (made
// once, at the prepared message's level 9, not the connection's 1), masked afresh each time.
BOOST_AUTO_TEST_CASE(a_compressing_client_masks_the_prepared_deflate_bytes) {
    std::string text;
    for (int i = 0; text.size() < 3000; ++i) text += "{\"id\":" + std::to_string(i * 37 % 1000) + ",\"ok\":true},";
    auto pm = std::make_shared<const prepared_message>(corows::as_bytes(text), message_kind::text, 9);
    std::vector<raw_frame> frames;
    loop l;
    l.spawn("raw server", [&]() -> asio::awaitable<void> {
        raw_peer p = co_await accept_raw(l);
        std::string req = co_await p.read_request();
        BOOST_REQUIRE(req.find("permessage-deflate") != std::string::npos);
        co_await p.answer_101(req, "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n");
        for (int i = 0; i < 3; ++i) {
            auto f = co_await p.read_frame();
            BOOST_REQUIRE(f);
            frames.push_back(*f);
        }
        co_await p.send(server_frame(0x8, close_payload(1000)));
        co_await expect_close(p);
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        options o;
        o.deflate.enabled = true;
        o.deflate.level = 1;
        tcp_ws ws = co_await l.connect_ws(o);
        co_await ws.handshake(l.host(), "/");
        BOOST_REQUIRE(ws.deflate());
        BOOST_REQUIRE(ws.deflate()->client_no_context_takeover);
        for (int i = 0; i < 2; ++i) co_await ws.write_prepared(pm);
        // Its own message, for contrast: compressed at the connection's level.
        co_await ws.write_text(text);
        while (co_await ws.read_message()) {
        }
    });
    l.run(std::chrono::seconds(30));
    BOOST_REQUIRE(frames.size() == 3u);
    auto expected = pm->deflated_payload(15);
    BOOST_TEST(!expected.empty());
    for (int i = 0; i < 2; ++i) {
        BOOST_TEST(frames[i].masked);
        BOOST_TEST(frames[i].rsv == 4); // RSV1
        BOOST_TEST(frames[i].op == 0x1);
        BOOST_TEST((frames[i].payload == bytes(expected.begin(), expected.end())));
    }
    BOOST_TEST(frames[2].rsv == 4);
    BOOST_TEST((frames[2].payload != frames[0].payload)); // level 1 differs from level 9
}

BOOST_AUTO_TEST_CASE(frames_are_shared_by_reference_not_copied) {
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        std::vector<tcp_ws> conns;
        for (int k = 0; k < 3; ++k) {
            conns.push_back(co_await l.accept_ws(options{}));
            co_await conns.back().accept();
        }
        std::string text(1000, 'x');
        auto pm = prepared_message::make(corows::as_bytes(text), message_kind::text);
        for (auto& ws : conns) BOOST_REQUIRE(ws.send(pm));
        // Queued by reference: each connection holds the prepared message until it is written.
        BOOST_TEST(pm.use_count() == 4);
        // The queue charges what the reference keeps alive: the frame, the entry and the
        // prepared message itself, not only the bytes it will write.
        BOOST_TEST(conns[0].queued_bytes() ==
                   corows::detail::write_queue::charge(pm->frame(), *pm));
        for (auto& ws : conns) co_await ws.flush();
        BOOST_TEST(pm.use_count() == 1);
        for (auto& ws : conns) co_await ws.close(1000, {});
    });
    for (int k = 0; k < 3; ++k) {
        l.spawn("client", [&]() -> asio::awaitable<void> {
            tcp_ws ws = co_await l.connect_ws(options{});
            co_await ws.handshake(l.host(), "/");
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m);
            BOOST_TEST(m->str() == std::string(1000, 'x'));
            while (co_await ws.read_message()) {
            }
        });
    }
    l.run(std::chrono::seconds(30));
}

BOOST_AUTO_TEST_CASE(send_refuses_when_the_queue_is_full_and_once_closed) {
    options server_opts;
    server_opts.write_queue_limit = 64 * 1024;
    std::size_t accepted = 0;
    std::size_t received = 0;
    run_pair(server_opts, options{},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            std::string chunk(8 * 1024, 'q');
            auto pm = prepared_message::make(corows::as_bytes(chunk), message_kind::binary);
            // The client does not read yet: the kernel's buffers fill (we let the writer run
            // after each send), then our queue.
            while (ws.send(pm)) {
                ++accepted;
                co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
                BOOST_REQUIRE(accepted < 100'000);
            }
            BOOST_TEST(ws.queued_bytes() >= server_opts.write_queue_limit);
            const std::size_t charge = corows::detail::write_queue::charge(pm->frame(), *pm);
            BOOST_TEST(ws.queued_bytes() < server_opts.write_queue_limit + charge);
            BOOST_TEST(ws.is_open());
            co_await ws.close(1000, {});
            BOOST_TEST(!ws.send(pm));
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(300));
            co_await t.async_wait(asio::use_awaitable);
            message m;
            while (co_await ws.read_message(m)) {
                BOOST_REQUIRE(m.size() == 8 * 1024u);
                ++received;
            }
        });
    BOOST_TEST(accepted > 8u); // more than the queue alone holds: the kernel took some
    BOOST_TEST(received == accepted);
}

BOOST_AUTO_TEST_SUITE_END()
