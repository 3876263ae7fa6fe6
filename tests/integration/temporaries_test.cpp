// SPDX-License-Identifier: BSL-1.0
// Every public operation called the way users write it: string literals, temporaries and
// braced or constructed parameter objects inside the co_await expression itself. g++ 12
// destroys the members of an aggregate initialised there twice; the parameter types have
// constructors so that this cannot happen. Run under AddressSanitizer in build-asan.
#include "server_thread.hpp"

#if defined(COROWS_HAS_TLS)
#include <corows/connect.hpp>
#endif

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace corows::test;
using namespace std::chrono_literals;

namespace {

/// The server side: read_request, accept with a decision built in place, every write form,
/// and a close with a reason made on the spot; or a refusal with fields made on the spot.
asio::awaitable<void> serve_in_place(corows::websocket<asio::ip::tcp::socket>& ws) {
    corows::http_request req = co_await ws.read_request();
    if (req.path() == "/refused") {
        co_await ws.refuse(401, std::string("who are you? (a body longer than sixteen bytes)"),
                           std::vector<corows::http_field>(1, corows::http_field("WWW-Authenticate", "Bearer realm=\"a realm name\"")));
        co_return;
    }
    if (req.find("Sec-WebSocket-Protocol")) {
        co_await ws.accept(std::move(req), corows::accept_decision("chat-protocol-version-one")
                                               .field("Set-Cookie", "session=a-cookie-longer-than-sixteen"));
    } else {
        co_await ws.accept(std::move(req), corows::accept_decision{});
    }
    corows::message m;
    while (co_await ws.read_message(m)) {
        if (m.text() == "close please") {
            co_await ws.close(1000, std::string("closing with a reason longer than sixteen bytes"));
            co_return;
        }
        co_await ws.write_text(std::string(m.text()) + " (echoed by the server, a long suffix)");
        co_await ws.write_binary(std::vector<std::uint8_t>(40, 7));
        co_await ws.write_message(corows::as_bytes(std::string("a message object built in place")),
                                  corows::message_kind::text);
        co_await ws.ping(corows::as_bytes(std::string("a ping payload longer than sixteen")));
        co_await ws.write_prepared(corows::prepared_message::make(
            corows::as_bytes(std::string("a prepared message built in place")), corows::message_kind::text));
    }
}

/// Reads the four answers serve_in_place() gives to `text`.
template <class Stream>
asio::awaitable<void> expect_answers(corows::websocket<Stream>& ws, std::string text) {
    auto a = co_await ws.read_message();
    BOOST_REQUIRE(a.has_value());
    BOOST_TEST(a->text() == text + " (echoed by the server, a long suffix)");
    auto b = co_await ws.read_message();
    BOOST_REQUIRE(b.has_value());
    BOOST_TEST(b->data().size() == 40u);
    auto c = co_await ws.read_message();
    BOOST_REQUIRE(c.has_value());
    BOOST_TEST(c->text() == "a message object built in place");
    auto d = co_await ws.read_message();
    BOOST_REQUIRE(d.has_value());
    BOOST_TEST(d->text() == "a prepared message built in place");
}

/// A websocket over a fresh connection to 127.0.0.1:`port`, before its handshake; its
/// options are a braced temporary too.
asio::awaitable<tcp_ws> socket_to(unsigned short port) {
    tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    co_return tcp_ws(std::move(sock), corows::options{});
}

} // namespace

BOOST_AUTO_TEST_SUITE(temporaries)

BOOST_AUTO_TEST_CASE(handshake_and_io_with_arguments_built_in_the_co_await) {
    server_thread srv(corows::server_options(), serve_in_place, raw_handler());
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await socket_to(srv.port());
        co_await ws.handshake(srv.host(), std::string("/a-target-path-longer-than-sixteen"),
                              corows::handshake_request("http://origin.example.com")
                                  .field("Authorization", "Bearer a-token-longer-than-sixteen"));
        co_await ws.write_text(std::string("hello from a temporary string"));
        co_await expect_answers(ws, "hello from a temporary string");
        co_await ws.write_text("close please");
        BOOST_TEST(!(co_await ws.read_message()).has_value());
        BOOST_TEST(ws.close_code() == 1000);
        BOOST_TEST(ws.close_reason() == "closing with a reason longer than sixteen bytes");
    });
    BOOST_TEST(l.run(30s));
}

BOOST_AUTO_TEST_CASE(handshake_with_an_empty_braced_request) {
    server_thread srv(corows::server_options(), serve_in_place, raw_handler());
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await socket_to(srv.port());
        co_await ws.handshake(srv.host(), "/", corows::handshake_request{});
        co_await ws.write_text("x");
        co_await expect_answers(ws, "x");
        co_await ws.close(1000, std::string("a client reason longer than sixteen bytes"));
    });
    BOOST_TEST(l.run(30s));
}

#if defined(COROWS_HAS_TLS)
BOOST_AUTO_TEST_CASE(connect_with_arguments_built_in_the_co_await) {
    server_thread srv(corows::server_options(), serve_in_place, raw_handler());
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::connect_options co;
        co.connection.subprotocols.push_back("chat-protocol-version-one");
        co.request = corows::handshake_request("http://origin.example.com")
                         .field("Authorization", "Bearer a-token-longer-than-sixteen");
        auto ws = co_await corows::connect("ws://" + srv.host() + "/chat", co, asio::use_awaitable);
        BOOST_TEST(ws.subprotocol() == "chat-protocol-version-one");
        co_await ws.write_text("via connect");
        co_await expect_answers(ws, "via connect");
        co_await ws.close();
        auto plain = co_await corows::connect("ws://" + srv.host() + "/plain", corows::connect_options{});
        BOOST_TEST(plain.is_open());
        co_await plain.close();
        auto [ec, refused] = co_await corows::connect("ws://" + srv.host() + "/refused", corows::connect_options{},
                                                      tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == corows::error::bad_status);
        BOOST_TEST(!refused.is_open());
    });
    BOOST_TEST(l.run(30s));
}
#endif

BOOST_AUTO_TEST_SUITE_END()
