// SPDX-License-Identifier: BSL-1.0
// Plain HTTP on a custom server's connection: request bodies after read_request(), responses
// that keep the connection for the next request, curl as the client.
#include "loopback.hpp"

#include <corows/server.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

namespace {

using namespace corows::test;
using corows::error;
using corows::http_request;
using corows::http_response;
using corows::options;
using std::chrono::milliseconds;
using raw_ws = corows::websocket<asio::ip::tcp::socket>;

// Serves requests on one connection until the client leaves: each body comes back in a 200.
asio::awaitable<void> echo_bodies(raw_ws& ws, std::atomic<int>& requests) {
    for (;;) {
        corows::error_code ec;
        http_request req;
        std::tie(ec, req) = co_await ws.read_request(corows::use_tuple);
        if (ec) co_return;
        std::string body;
        std::tie(ec, body) = co_await ws.read_body(req, corows::use_tuple);
        if (ec) co_return;
        ++requests;
        http_response res;
        res.fields.add("Content-Type", "text/plain");
        res.body = req.target + ":" + body;
        co_await ws.write_response(res);
    }
}

// Runs a command and returns what it printed; `status` gets its exit status.
std::string run_command(const std::string& command, int& status) {
    std::string out;
    FILE* p = popen(command.c_str(), "r");
    BOOST_REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    status = pclose(p);
    return out;
}

// A request head for `target` with `fields`, ending with the blank line.
std::string post(const std::string& target, const std::string& fields) {
    return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + "\r\n";
}

} // namespace

BOOST_AUTO_TEST_SUITE(plain_http)

BOOST_AUTO_TEST_CASE(curl_posts_three_times_on_one_keep_alive_connection) {
    if (std::system("curl --version > /dev/null 2>&1") != 0) {
        BOOST_TEST_MESSAGE("curl is not installed (tools/setup.sh installs it): skipped");
        return;
    }
    std::atomic<int> connections{0};
    std::atomic<int> requests{0};
    corows::server srv(corows::server_options{});
    const auto port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
    std::thread runner([&] {
        srv.run_http([&](raw_ws& ws) -> asio::awaitable<void> {
            ++connections;
            co_await echo_bodies(ws, requests);
        });
    });
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    // --next keeps curl's connection pool: the second POST reuses the first one's connection.
    int status = -1;
    // The third is sent chunked.
    const std::string out = run_command("curl -sS --http1.1 --max-time 20 " + base + "/one -d first-body --next -sS "
                                        "--http1.1 --max-time 20 " + base + "/two --data-binary @- --next -sS "
                                        "--http1.1 --max-time 20 -H 'Transfer-Encoding: chunked' " + base +
                                        "/three -d third <<'EOF'\nsecond body\nEOF\n", status);
    srv.stop(milliseconds(1000));
    runner.join();
    BOOST_TEST(status == 0);
    BOOST_TEST(out == "/one:first-body/two:second body\n/three:third");
    BOOST_TEST(requests.load() == 3);
    BOOST_TEST(connections.load() == 1);
}

BOOST_AUTO_TEST_CASE(body_and_pipelined_request_in_one_segment) {
    // The head, its body and the whole next request arrive together: the body is cut at its
    // length and the next request is read from what stays buffered.
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request first = co_await ws.read_request();
            BOOST_TEST(first.target == "/a");
            BOOST_TEST(ws.buffered_input().size() > 5u);
            std::string body = co_await ws.read_body(first);
            BOOST_TEST(body == "hello");
            http_response res;
            res.body = "got " + body;
            co_await ws.write_response(res);
            http_request second = co_await ws.read_request();
            BOOST_TEST(second.target == "/b");
            std::string body2 = co_await ws.read_body(second);
            BOOST_TEST(body2 == "0123456789");
            BOOST_TEST(ws.buffered_input().empty());
            http_response last;
            last.status = 201;
            last.fields.add("Connection", "close");
            last.body = body2;
            co_await ws.write_response(last);
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string both =
                post("/a", "Content-Length: 5\r\n") + "hello" + post("/b", "Content-Length: 10\r\n") + "0123456789";
            co_await p.send_text(both);
            std::string answer = co_await p.read_to_end();
            BOOST_TEST(answer == "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ngot hello"
                                 "HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 10\r\n\r\n0123456789");
            BOOST_TEST(p.saw_eof());
        });
}

BOOST_AUTO_TEST_CASE(a_body_arriving_in_pieces_is_read_whole) {
    const std::string big(100000, 'x');
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            std::string body = co_await ws.read_body(req);
            BOOST_TEST(body.size() == big.size());
            BOOST_TEST((body == big));
            http_response res;
            res.body = std::to_string(body.size());
            co_await ws.write_response(res);
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string start = post("/", "Content-Length: 100000\r\n") + big.substr(0, 10);
            co_await p.send_text(start);
            co_await sleep(milliseconds(50));
            const std::string rest = big.substr(10);
            co_await p.send_text(rest);
            std::string head = co_await p.read_head();
            BOOST_TEST(head == "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n");
        });
}

BOOST_AUTO_TEST_CASE(a_chunked_body_is_decoded_and_the_next_request_stays) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            std::string body = co_await ws.read_body(req);
            BOOST_TEST(body == "hello world");
            http_request next = co_await ws.read_request();
            BOOST_TEST(next.target == "/next");
            std::string none = co_await ws.read_body(next);
            BOOST_TEST(none.empty());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string wire = post("/", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" +
                                     "GET /next HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
            co_await p.send_text(wire);
        });
}

BOOST_AUTO_TEST_CASE(own_parser_takes_buffered_input) {
    // A coding under the chunked one is left to the application: read_body() refuses it and
    // keeps the bytes.
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            corows::error_code ec;
            std::string body;
            std::tie(ec, body) = co_await ws.read_body(req, corows::use_tuple);
            BOOST_TEST((ec == error::length_required), ec.message());
            BOOST_TEST(body.empty());
            auto in = ws.buffered_input();
            const std::string seen(reinterpret_cast<const char*>(in.data()), in.size());
            BOOST_TEST(seen == "5\r\nhello\r\n0\r\n\r\n");
            ws.consume_buffered(3);
            BOOST_TEST(ws.buffered_input().size() == seen.size() - 3);
            ws.consume_buffered(1000);
            BOOST_TEST(ws.buffered_input().empty());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string chunked = post("/", "Transfer-Encoding: gzip, chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n";
            co_await p.send_text(chunked);
        });
}

BOOST_AUTO_TEST_CASE(bodies_over_the_limit_are_refused_without_reading) {
    options o;
    o.http.max_body_size = 1000;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            corows::error_code ec;
            std::tie(ec, std::ignore) = co_await ws.read_body(req, corows::use_tuple);
            BOOST_TEST((ec == error::body_too_large), ec.message());
            BOOST_TEST(corows::http_status_for(ec) == 413u);
            try {
                co_await ws.read_body(req);
                BOOST_ERROR("read_body() over the limit did not throw");
            } catch (const corows::system_error& e) {
                BOOST_TEST((e.code() == error::body_too_large));
            }
            const std::string why = ec.message();
            co_await ws.refuse(corows::http_status_for(ec), why);
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string head = post("/", "Content-Length: 1001\r\n");
            co_await p.send_text(head);
            std::string answer = co_await p.read_to_end();
            BOOST_TEST(answer.rfind("HTTP/1.1 413 Content Too Large\r\n", 0) == 0u, answer);
        });
}

BOOST_AUTO_TEST_CASE(expect_100_continue_is_answered) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            std::string body = co_await ws.read_body(req);
            BOOST_TEST(body == "data");
            http_response res;
            res.status = 204;
            co_await ws.write_response(res);
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string head = post("/", "Content-Length: 4\r\nExpect: 100-continue\r\n");
            co_await p.send_text(head);
            std::string interim = co_await p.read_head();
            BOOST_TEST(interim == "HTTP/1.1 100 Continue\r\n\r\n");
            co_await p.send_text("data");
            std::string answer = co_await p.read_head();
            BOOST_TEST(answer == "HTTP/1.1 204 No Content\r\n\r\n");
        });
}

BOOST_AUTO_TEST_CASE(a_body_cut_short_fails_and_closes) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            corows::error_code ec;
            std::string body;
            std::tie(ec, body) = co_await ws.read_body(req, corows::use_tuple);
            BOOST_TEST((ec == asio::error::eof), ec.message());
            http_response res;
            std::tie(ec) = co_await ws.write_response(res, corows::use_tuple);
            BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string cut = post("/", "Content-Length: 50\r\n") + "short";
            co_await p.send_text(cut);
            p.socket().shutdown(asio::socket_base::shutdown_send);
            co_await p.read_to_end();
        });
}

BOOST_AUTO_TEST_CASE(an_idle_keep_alive_connection_times_out) {
    options o;
    o.handshake_timeout = milliseconds(200);
    event done;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            http_request req = co_await ws.read_request();
            http_response res;
            co_await ws.write_response(res);
            const auto start = std::chrono::steady_clock::now();
            corows::error_code ec;
            std::tie(ec, std::ignore) = co_await ws.read_request(corows::use_tuple);
            done.set();
            BOOST_TEST((ec == error::timeout), ec.message());
            BOOST_TEST(ms_since(start) >= 150);
            BOOST_TEST(ms_since(start) < 2000);
        },
        [&](raw_peer& p, loop&) -> asio::awaitable<void> {
            const std::string get = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
            co_await p.send_text(get);
            std::string head = co_await p.read_head();
            BOOST_TEST(head == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            co_await done.wait();
        });
}

BOOST_AUTO_TEST_CASE(plain_http_calls_are_refused_on_an_open_websocket) {
    run_pair({}, {},
        [](tcp_ws& ws) -> asio::awaitable<void> {
            corows::error_code ec;
            http_response res;
            std::tie(ec) = co_await ws.write_response(res, corows::use_tuple);
            BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
            http_request req;
            std::tie(ec, std::ignore) = co_await ws.read_body(req, corows::use_tuple);
            BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
            ws.consume_buffered(1000);
            co_await ws.close();
        },
        [](tcp_ws& ws) -> asio::awaitable<void> {
            auto m = co_await ws.read_message();
            BOOST_TEST(!m.has_value());
        });
}

BOOST_AUTO_TEST_SUITE_END()
