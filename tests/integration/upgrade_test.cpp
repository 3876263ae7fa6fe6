// SPDX-License-Identifier: BSL-1.0
// The opening handshake over loopback: refusals with the right HTTP status, a client that
// rejects a bad answer with the specific error, subprotocol negotiation and extra fields.
#include "loopback.hpp"

#include <boost/test/unit_test.hpp>

namespace {

using namespace corows::test;
using corows::accept_decision;
using corows::error;
using corows::handshake_request;
using corows::http_field;
using corows::options;
using std::chrono::milliseconds;

const std::string good_key = "dGhlIHNhbXBsZSBub25jZQ==";

// A valid request head with `replace` substituted for the field line starting with the same
// name (or appended), or with `remove` removed.
std::string request_with(const std::string& start_line, const std::string& remove, const std::string& extra) {
    std::vector<std::string> lines{"Host: 127.0.0.1", "Upgrade: websocket", "Connection: Upgrade",
                                   "Sec-WebSocket-Key: " + good_key, "Sec-WebSocket-Version: 13"};
    std::string out = start_line + "\r\n";
    for (const auto& l : lines)
        if (remove.empty() || l.rfind(remove, 0) != 0) out += l + "\r\n";
    return out + extra + "\r\n";
}

// Sends `request`; the server's accept() must fail with `expected_ec` after answering
// `status` (and carrying `must_contain`), then closing.
void refused(const std::string& request, unsigned status, error expected_ec, const std::string& must_contain) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            corows::error_code ec;
            std::tie(ec) = co_await ws.accept(corows::use_tuple);
            BOOST_TEST(ec == err(expected_ec));
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            co_await p.try_send(corows::as_bytes(request));
            std::string answer = co_await p.read_to_end();
            BOOST_TEST(p.saw_eof(), "server did not close: " << p.last_error().message());
            std::string expected = "HTTP/1.1 " + std::to_string(status) + " ";
            BOOST_TEST(answer.rfind(expected, 0) == 0u, "got: " << answer.substr(0, answer.find('\r')));
            BOOST_TEST(answer.find("\r\n\r\n") != std::string::npos);
            if (!must_contain.empty())
                BOOST_TEST(answer.find(must_contain) != std::string::npos, "missing " << must_contain);
        });
}

// A raw server answering the client's request with `make_answer(request)`; the client's
// handshake must fail with `expected_ec` and close TCP.
void bad_answer(const options& client_opts, std::function<std::string(const std::string&)> make_answer,
                error expected_ec) {
    run_raw_server(client_opts,
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            corows::error_code ec;
            const handshake_request none;
            std::tie(ec) = co_await ws.handshake(l.host(), "/", none, corows::use_tuple);
            BOOST_TEST(ec == err(expected_ec));
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            BOOST_REQUIRE(!req.empty());
            co_await p.try_send(corows::as_bytes(make_answer(req)));
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof, "client did not close TCP");
        });
}

options offering(std::vector<std::string> subprotocols) {
    options o;
    o.subprotocols = std::move(subprotocols);
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(upgrade)

BOOST_AUTO_TEST_CASE(bad_requests_get_the_right_status) {
    refused(request_with("POST / HTTP/1.1", "", ""), 405, error::bad_method, "Allow: GET");
    refused(request_with("GET / HTTP/1.0", "", ""), 400, error::bad_http_version, "");
    refused(request_with("GET / HTTP/1.1", "Host:", ""), 400, error::missing_host, "");
    refused(request_with("GET / HTTP/1.1", "Upgrade:", "Upgrade: h2c\r\n"), 400, error::bad_upgrade, "");
    refused(request_with("GET / HTTP/1.1", "Connection:", "Connection: keep-alive\r\n"), 400,
            error::bad_connection, "");
    refused(request_with("GET / HTTP/1.1", "Sec-WebSocket-Key:", "Sec-WebSocket-Key: c2hvcnQ=\r\n"), 400,
            error::bad_key, "");
    refused(request_with("GET / HTTP/1.1", "Sec-WebSocket-Key:", ""), 400, error::bad_key, "");
    refused(request_with("GET / HTTP/1.1", "", "Sec-WebSocket-Protocol: not a token\r\n"), 400,
            error::http_parse_error, "");
    refused("this is not http\r\n\r\n", 400, error::http_parse_error, "");
}

BOOST_AUTO_TEST_CASE(wrong_version_gets_426_with_version_13) {
    refused(request_with("GET / HTTP/1.1", "Sec-WebSocket-Version:", "Sec-WebSocket-Version: 8\r\n"), 426,
            error::bad_version, "\r\nSec-WebSocket-Version: 13\r\n");
    refused(request_with("GET / HTTP/1.1", "Sec-WebSocket-Version:", ""), 426, error::bad_version,
            "\r\nSec-WebSocket-Version: 13\r\n");
}

BOOST_AUTO_TEST_CASE(other_http_versions_get_505) {
    refused(request_with("GET / HTTP/2.0", "", ""), 505, error::http_version_not_supported,
            "HTTP/1.1 505 HTTP Version Not Supported\r\n");
    refused(request_with("GET / HTTP/9.9", "", ""), 505, error::http_version_not_supported, "Connection: close\r\n");
    refused(request_with("GET / HTTP/1.2", "", ""), 505, error::http_version_not_supported, "");
}

BOOST_AUTO_TEST_CASE(upgrade_requests_with_a_body_get_400) {
    // What follows each head would be read as frames if the upgrade went through.
    const auto frame = client_frame(0x1, "smuggled");
    const std::string smuggled(frame.begin(), frame.end());
    refused(request_with("GET / HTTP/1.1", "", "Content-Length: 5\r\n") + "hello" + smuggled, 400,
            error::upgrade_with_body, "upgrade request with a body");
    refused(request_with("GET / HTTP/1.1", "", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n", 400,
            error::upgrade_with_body, "");
    refused(request_with("GET / HTTP/1.1", "", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + "hello",
            400, error::conflicting_length, "");
    refused(request_with("GET / HTTP/1.1", "", "Content-Length: 1, 2\r\n"), 400, error::bad_content_length, "");
}

BOOST_AUTO_TEST_CASE(an_upgrade_request_with_content_length_0_is_accepted) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "first");
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string request = request_with("GET / HTTP/1.1", "", "Content-Length: 0\r\n");
            co_await p.send_text(request);
            std::string head = co_await p.read_head();
            BOOST_TEST(head.rfind("HTTP/1.1 101 ", 0) == 0u, head);
            const auto frame = client_frame(0x1, "first");
            co_await p.send(frame);
        });
}

BOOST_AUTO_TEST_CASE(oversized_heads_get_431) {
    refused(request_with("GET / HTTP/1.1", "", "X-Big: " + std::string(9000, 'a') + "\r\n"), 431,
            error::header_too_large, "");
    std::string many;
    for (int i = 0; i < 100; ++i) many += "X-F" + std::to_string(i) + ": v\r\n";
    refused(request_with("GET / HTTP/1.1", "", many), 431, error::too_many_headers, "");
}

BOOST_AUTO_TEST_CASE(read_request_then_accept_refuses_the_same_way) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            corows::http_request req = co_await ws.read_request();
            BOOST_TEST(req.method == "GET");
            corows::error_code ec;
            const accept_decision none;
            std::tie(ec) = co_await ws.accept(req, none, corows::use_tuple);
            BOOST_TEST(ec == err(error::bad_version));
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            co_await p.send_text(request_with("GET / HTTP/1.1", "Sec-WebSocket-Version:", "Sec-WebSocket-Version: 12\r\n"));
            std::string answer = co_await p.read_to_end();
            BOOST_TEST(answer.rfind("HTTP/1.1 426 ", 0) == 0u);
            BOOST_TEST(answer.find("\r\nSec-WebSocket-Version: 13\r\n") != std::string::npos);
            BOOST_TEST(p.saw_eof());
        });
}

BOOST_AUTO_TEST_CASE(refuse_sends_status_body_and_fields) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            corows::http_request req = co_await ws.read_request();
            const std::array<http_field, 1> fields{http_field{"WWW-Authenticate", "Bearer"}};
            co_await ws.refuse(401, "who are you?", fields);
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            co_await p.send_text(request_with("GET / HTTP/1.1", "", ""));
            std::string answer = co_await p.read_to_end();
            BOOST_TEST(answer.rfind("HTTP/1.1 401 ", 0) == 0u);
            BOOST_TEST(answer.find("\r\nWWW-Authenticate: Bearer\r\n") != std::string::npos);
            BOOST_TEST(answer.size() >= 12u);
            BOOST_TEST(answer.substr(answer.size() - 12) == "who are you?");
            BOOST_TEST(p.saw_eof());
        });
}

BOOST_AUTO_TEST_CASE(client_rejects_a_non_101_answer) {
    bad_answer({}, [](const std::string&) {
        return std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
    }, error::bad_status);
    bad_answer({}, [](const std::string&) {
        return std::string("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
    }, error::bad_status);
}

BOOST_AUTO_TEST_CASE(client_rejects_a_wrong_accept_key) {
    bad_answer({}, [](const std::string&) {
        return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Accept: " + corows::accept_key(good_key) + "\r\n\r\n";
    }, error::bad_accept);
    bad_answer({}, [](const std::string&) {
        return std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
    }, error::bad_accept);
}

BOOST_AUTO_TEST_CASE(client_rejects_an_unoffered_subprotocol) {
    bad_answer({}, [](const std::string& req) {
        return raw_peer::switching_protocols(req, "Sec-WebSocket-Protocol: chat\r\n");
    }, error::bad_subprotocol);
    bad_answer(offering({"chat.v1"}), [](const std::string& req) {
        return raw_peer::switching_protocols(req, "Sec-WebSocket-Protocol: chat.v2\r\n");
    }, error::bad_subprotocol);
}

BOOST_AUTO_TEST_CASE(client_rejects_an_unoffered_extension) {
    // No offer at all, and an answer with permessage-deflate.
    bad_answer({}, [](const std::string& req) {
        BOOST_TEST(req.find("Sec-WebSocket-Extensions") == std::string::npos);
        return raw_peer::switching_protocols(req, "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    }, error::bad_extension);
    // A deflate offer, and an answer with another extension.
    options o;
    o.deflate.enabled = true;
    bad_answer(o, [](const std::string& req) {
        BOOST_TEST(req.find("Sec-WebSocket-Extensions: permessage-deflate") != std::string::npos);
        return raw_peer::switching_protocols(req, "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n");
    }, error::bad_extension);
}

BOOST_AUTO_TEST_CASE(subprotocol_chosen_by_server_preference) {
    run_pair(offering({"chat.v2", "chat.v1"}), offering({"chat.v1", "chat.v2", "other"}),
        [](tcp_ws& ws) -> asio::awaitable<void> {
            BOOST_TEST(ws.subprotocol() == "chat.v2");
            auto m = co_await ws.read_message();
            BOOST_TEST(!m.has_value());
        },
        [](tcp_ws& ws) -> asio::awaitable<void> {
            BOOST_TEST(ws.subprotocol() == "chat.v2");
            co_await ws.close();
        });
}

BOOST_AUTO_TEST_CASE(no_common_subprotocol_means_none) {
    for (int variant = 0; variant < 3; ++variant) {
        options so = variant == 1 ? options{} : offering({"a"});
        options co = variant == 2 ? options{} : offering({"b"});
        run_pair(so, co,
            [](tcp_ws& ws) -> asio::awaitable<void> {
                BOOST_TEST(ws.subprotocol().empty());
                auto m = co_await ws.read_message();
                BOOST_REQUIRE(m.has_value());
                co_await ws.write_message(*m);
                auto end = co_await ws.read_message();
                BOOST_TEST(!end.has_value());
            },
            [](tcp_ws& ws) -> asio::awaitable<void> {
                BOOST_TEST(ws.subprotocol().empty());
                co_await ws.write_text("works without one");
                auto m = co_await ws.read_message();
                BOOST_REQUIRE(m.has_value());
                BOOST_TEST(m->text() == "works without one");
                co_await ws.close();
            });
    }
}

BOOST_AUTO_TEST_CASE(server_application_picks_the_subprotocol) {
    const options server_opts = offering({"chat.v2", "chat.v1"});
    const options client_opts = offering({"chat.v1", "chat.v2"});
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(server_opts);
        corows::http_request req = co_await ws.read_request();
        BOOST_TEST(req.find("Sec-WebSocket-Protocol").value_or("") == "chat.v1, chat.v2");
        accept_decision d;
        d.subprotocol = "chat.v1"; // not the server's first preference
        co_await ws.accept(req, d);
        BOOST_TEST(ws.subprotocol() == "chat.v1");
        co_await ws.close();
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(client_opts);
        co_await ws.handshake(l.host());
        BOOST_TEST(ws.subprotocol() == "chat.v1");
        auto end = co_await ws.read_message();
        BOOST_TEST(!end.has_value());
    });
    l.run(milliseconds(10'000));
}

BOOST_AUTO_TEST_CASE(server_choosing_an_unoffered_subprotocol_fails_both_ends) {
    const options defaults;
    const options client_opts = offering({"chat.v1"});
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(defaults);
        corows::http_request req = co_await ws.read_request();
        accept_decision d;
        d.subprotocol = "never.offered";
        corows::error_code ec;
        std::tie(ec) = co_await ws.accept(req, d, corows::use_tuple);
        BOOST_TEST(ec == err(error::handshake_failed));
        BOOST_TEST(!ws.is_open());
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(client_opts);
        corows::error_code ec;
        const handshake_request none;
        std::tie(ec) = co_await ws.handshake(l.host(), "/", none, corows::use_tuple);
        BOOST_TEST(ec == err(error::bad_status));
        BOOST_TEST(!ws.is_open());
    });
    l.run(milliseconds(10'000));
}

BOOST_AUTO_TEST_CASE(client_fields_reach_the_server) {
    const options defaults;
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.accept_ws(defaults);
        corows::http_request req = co_await ws.read_request();
        BOOST_TEST(req.target == "/chat?room=7");
        BOOST_TEST(req.path() == "/chat");
        BOOST_TEST(req.query() == "room=7");
        BOOST_TEST(req.find("Origin").value_or("") == "https://app.example");
        BOOST_TEST(req.find("Authorization").value_or("") == "Bearer t0k3n");
        BOOST_TEST(req.find("Cookie").value_or("") == "session=abc");
        co_await ws.accept(req);
        auto m = co_await ws.read_message();
        BOOST_TEST(!m.has_value());
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        tcp_ws ws = co_await l.connect_ws(defaults);
        handshake_request extra;
        extra.origin = "https://app.example";
        extra.extra_fields.push_back(http_field{"Authorization", "Bearer t0k3n"});
        extra.extra_fields.push_back(http_field{"Cookie", "session=abc"});
        co_await ws.handshake(l.host(), "/chat?room=7", std::move(extra));
        co_await ws.close();
    });
    l.run(milliseconds(10'000));
}

BOOST_AUTO_TEST_CASE(client_fields_on_the_wire) {
    run_raw_server({},
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            handshake_request extra;
            extra.origin = "https://app.example";
            extra.extra_fields.push_back(http_field{"X-Trace", "42"});
            co_await ws.handshake(l.host(), "/path", std::move(extra));
            ws.abort();
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            BOOST_TEST(req.rfind("GET /path HTTP/1.1\r\n", 0) == 0u);
            BOOST_TEST(req.find("\r\nOrigin: https://app.example\r\n") != std::string::npos);
            BOOST_TEST(req.find("\r\nX-Trace: 42\r\n") != std::string::npos);
            BOOST_TEST(req.find("\r\nSec-WebSocket-Version: 13\r\n") != std::string::npos);
            co_await p.answer_101(req, "");
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(server_extra_fields_reach_the_client) {
    run_raw_client(offering({"chat"}),
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            corows::http_request req = co_await ws.read_request();
            BOOST_TEST(req.find("X-Token").value_or("") == "abc");
            accept_decision d;
            d.extra_fields.push_back(http_field{"Set-Cookie", "id=42; HttpOnly"});
            d.extra_fields.push_back(http_field{"X-Server", "corows-test"});
            co_await ws.accept(req, std::move(d));
            BOOST_TEST(ws.subprotocol() == "chat");
            auto m = co_await ws.read_message();
            BOOST_TEST(!m.has_value());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            std::string head = co_await p.upgrade(l.host(), "X-Token: abc\r\nSec-WebSocket-Protocol: x, chat\r\n");
            BOOST_TEST(head.find("\r\nSet-Cookie: id=42; HttpOnly\r\n") != std::string::npos);
            BOOST_TEST(head.find("\r\nX-Server: corows-test\r\n") != std::string::npos);
            BOOST_TEST(head.find("\r\nSec-WebSocket-Protocol: chat\r\n") != std::string::npos);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(first_frame_in_the_same_segment_as_the_request) {
    // A client that pipelines its first frame right behind the request head.
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "eager");
            co_await ws.close();
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            std::string req = request_with("GET / HTTP/1.1", "", "");
            bytes all = concat(bytes(req.begin(), req.end()), client_frame(0x1, "eager"));
            co_await p.send(all);
            std::string head = co_await p.read_head();
            BOOST_TEST(head.rfind("HTTP/1.1 101 ", 0) == 0u);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(first_frame_in_the_same_segment_as_the_response) {
    run_raw_server({},
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->text() == "welcome");
            co_await ws.close();
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            std::string head = raw_peer::switching_protocols(req, "");
            bytes all = concat(bytes(head.begin(), head.end()), server_frame(0x1, "welcome"));
            co_await p.send(all);
            auto f = co_await p.read_frame();
            BOOST_REQUIRE(f.has_value());
            BOOST_TEST(f->op == 0x8);
            co_await p.send(server_frame(0x8, close_payload(1000)));
            p.socket().close();
        });
}

BOOST_AUTO_TEST_SUITE_END()
