// SPDX-License-Identifier: BSL-1.0
// The closing handshake over loopback: who starts it, what goes on the wire, which codes are
// refused, and how long a silent peer can hold it up.
#include "loopback.hpp"

#include <boost/test/unit_test.hpp>

namespace {

using namespace corows::test;
using corows::error;
using corows::message;
using corows::options;
using std::chrono::milliseconds;

// The server waits for a close frame from the raw client and reports what it got.
struct server_view {
    corows::error_code ec;
    std::uint16_t code = 0;
    std::string reason;
};

// Sends `frames` from a raw client, then expects a close frame with `expected` and EOF;
// the corows server's read must fail with `expected_ec` (closed for a valid close).
void close_exchange(const bytes& frames, std::uint16_t expected, corows::error_code expected_ec,
                    server_view* seen = nullptr) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            message m;
            corows::error_code ec;
            ec = co_await corows::test::read_or_closed(ws, m);
            BOOST_TEST(ec == expected_ec);
            BOOST_TEST(!ws.is_open());
            if (seen) *seen = server_view{ec, ws.close_code(), std::string(ws.close_reason())};
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(frames);
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == expected);
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof, "server did not close TCP");
        });
}

} // namespace

BOOST_AUTO_TEST_SUITE(closing)

BOOST_AUTO_TEST_CASE(both_sides_close_at_once) {
    options o;
    o.close_timeout = milliseconds(3000);
    long long server_ms = -1, client_ms = -1;
    run_pair(o, o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            auto t0 = std::chrono::steady_clock::now();
            co_await ws.close(1000, "server bye");
            server_ms = ms_since(t0);
            BOOST_TEST(ws.close_code() == 4000);
            BOOST_TEST(ws.close_reason() == "client bye");
            BOOST_TEST(!ws.is_open());
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            auto t0 = std::chrono::steady_clock::now();
            co_await ws.close(4000, "client bye");
            client_ms = ms_since(t0);
            BOOST_TEST(ws.close_code() == 1000);
            BOOST_TEST(ws.close_reason() == "server bye");
            BOOST_TEST(!ws.is_open());
        });
    // Neither side may sit out its close timeout: each close frame answers the other.
    BOOST_TEST(server_ms >= 0);
    BOOST_TEST(server_ms < 1000);
    BOOST_TEST(client_ms >= 0);
    BOOST_TEST(client_ms < 1000);
}

BOOST_AUTO_TEST_CASE(server_close_with_reason_on_the_wire) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            co_await ws.close(4001, "maintenance window");
            BOOST_TEST(ws.close_code() == 4001);
            BOOST_TEST(ws.close_reason() == "ack");
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 4001);
            BOOST_TEST(c.reason == "maintenance window");
            co_await p.send(client_frame(0x8, close_payload(4001, "ack")));
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
}

BOOST_AUTO_TEST_CASE(client_close_with_reason_on_the_wire) {
    run_raw_server({},
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            co_await ws.close(1001, "page unloaded");
            BOOST_TEST(ws.close_code() == 1001);
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            co_await p.answer_101(req, "");
            auto f = co_await p.read_frame();
            BOOST_REQUIRE(f.has_value());
            BOOST_TEST(f->op == 0x8);
            BOOST_TEST(f->masked, "client frames must be masked");
            close_info c = parse_close(*f);
            BOOST_TEST(c.code == 1001);
            BOOST_TEST(c.reason == "page unloaded");
            co_await p.send(server_frame(0x8, close_payload(1001)));
            p.socket().close(); // the server closes TCP first
        });
}

BOOST_AUTO_TEST_CASE(long_reason_cut_at_utf8_boundary) {
    // "ab" and two-byte characters: the 123rd byte starts a character, so the cut is at 122.
    std::string reason = "ab";
    for (int i = 0; i < 80; ++i) reason += "\xc3\xa9";
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            co_await ws.close(1000, reason);
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            BOOST_TEST(c.reason.size() == 122u);
            BOOST_TEST(c.reason == reason.substr(0, 122));
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(local_close_refuses_unsendable_codes) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            const std::array<std::uint16_t, 7> codes{1005, 1006, 999, 1004, 1015, 2999, 5000};
            for (std::uint16_t code : codes) {
                corows::error_code ec;
                std::tie(ec) = co_await ws.close(code, "", corows::use_tuple);
                BOOST_TEST(ec == err(error::bad_close_code), "close(" << code << ")");
                BOOST_TEST(ws.is_open());
            }
            bool threw = false;
            try {
                co_await ws.close(1005);
            } catch (const corows::system_error& e) {
                threw = e.code() == err(error::bad_close_code);
            }
            BOOST_TEST(threw);
            // Nothing was sent: the connection still carries data, then closes normally.
            co_await ws.write_text("still open");
            co_await ws.close(1000);
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            auto f = co_await p.read_frame();
            BOOST_REQUIRE(f.has_value());
            BOOST_TEST(f->op == 0x1);
            BOOST_TEST(std::string(f->payload.begin(), f->payload.end()) == "still open");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(client_frame(0x8, close_payload(1000)));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(close_without_code_sends_empty_close) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            co_await ws.close(0, "ignored without a code");
            BOOST_TEST(ws.close_code() == 1005);
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            auto f = co_await p.read_frame();
            BOOST_REQUIRE(f.has_value());
            BOOST_TEST(f->op == 0x8);
            BOOST_TEST(f->payload.empty());
            co_await p.send(client_frame(0x8, ""));
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(valid_received_codes_are_echoed) {
    const std::array<std::uint16_t, 14> codes{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999};
    for (std::uint16_t code : codes) {
        server_view seen;
        close_exchange(client_frame(0x8, close_payload(code, "why")), code, err(error::closed), &seen);
        BOOST_TEST(seen.code == code);
        BOOST_TEST(seen.reason == "why");
    }
}

BOOST_AUTO_TEST_CASE(empty_close_is_answered_without_code) {
    server_view seen;
    close_exchange(client_frame(0x8, ""), 1005, err(error::closed), &seen);
    BOOST_TEST(seen.code == 1005);
}

BOOST_AUTO_TEST_CASE(invalid_received_codes_get_1002) {
    const std::array<std::uint16_t, 11> codes{0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535};
    for (std::uint16_t code : codes) {
        BOOST_TEST_CONTEXT("received close code " << code) {
            close_exchange(client_frame(0x8, close_payload(code)), 1002, err(error::bad_close_code));
        }
    }
}

BOOST_AUTO_TEST_CASE(one_byte_close_payload_gets_1002) {
    close_exchange(client_frame(0x8, std::string(1, '\x03')), 1002, err(error::bad_close_payload));
}

BOOST_AUTO_TEST_CASE(invalid_utf8_reason_gets_1007) {
    close_exchange(client_frame(0x8, close_payload(1000, "bad \xc3\x28 reason")), 1007, err(error::invalid_utf8));
    close_exchange(client_frame(0x8, close_payload(1000, "cut \xe2\x82")), 1007, err(error::invalid_utf8));
}

BOOST_AUTO_TEST_CASE(peer_that_never_answers_close_times_out) {
    options o;
    o.close_timeout = milliseconds(300);
    long long took = -1;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto t0 = std::chrono::steady_clock::now();
            corows::error_code ec;
            std::tie(ec) = co_await ws.close(1000, "bye", corows::use_tuple);
            took = ms_since(t0);
            BOOST_TEST(!ec, ec.message());
            BOOST_TEST(!ws.is_open());
            BOOST_TEST(ws.close_code() == 1006, "no close frame came back");
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            // Say nothing; the server must give up and drop TCP.
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 250);
    BOOST_TEST(took < 1500);
}

BOOST_AUTO_TEST_CASE(client_gives_up_on_a_silent_server) {
    options o;
    o.close_timeout = milliseconds(300);
    long long took = -1;
    run_raw_server(o,
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            auto t0 = std::chrono::steady_clock::now();
            corows::error_code ec;
            std::tie(ec) = co_await ws.close(1000, "", corows::use_tuple);
            took = ms_since(t0);
            BOOST_TEST(!ec, ec.message());
            BOOST_TEST(!ws.is_open());
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            co_await p.answer_101(req, "");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 250);
    BOOST_TEST(took < 1500);
}

BOOST_AUTO_TEST_CASE(client_closes_tcp_if_server_keeps_it_open) {
    // Both close frames crossed, but the server never closes TCP: the client does it after
    // its close timeout (RFC 6455 §7.1.1 leaves TCP to the server first).
    options o;
    o.close_timeout = milliseconds(300);
    long long took = -1;
    run_raw_server(o,
        [&](tcp_ws& ws, loop& l) -> asio::awaitable<void> {
            co_await ws.handshake(l.host());
            auto t0 = std::chrono::steady_clock::now();
            co_await ws.close(1000);
            took = ms_since(t0);
            BOOST_TEST(ws.close_code() == 1000);
        },
        [&](raw_peer& p) -> asio::awaitable<void> {
            std::string req = co_await p.read_request();
            co_await p.answer_101(req, "");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await p.send(server_frame(0x8, close_payload(1000)));
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 250);
    BOOST_TEST(took < 1500);
}

BOOST_AUTO_TEST_CASE(data_after_peer_close_is_ignored) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_TEST(!m.has_value(), "a message after the close frame was delivered");
            BOOST_TEST(ws.close_code() == 1000);
            BOOST_TEST(ws.close_reason() == "done");
            auto again = co_await ws.read_message();
            BOOST_TEST(!again.has_value());
            corows::error_code ec;
            std::tie(ec) = co_await ws.write_message(corows::as_bytes("too late"), corows::message_kind::text, false, corows::use_tuple);
            BOOST_TEST(ec == err(error::closed));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            // The close and a text frame after it, in one TCP segment; then garbage.
            co_await p.send(concat(client_frame(0x8, close_payload(1000, "done")),
                                    client_frame(0x1, "after close"), bytes(3, 0xff)));
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            co_await expect_eof(p);
        });
}

BOOST_AUTO_TEST_CASE(data_after_our_close_is_discarded) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            corows::error_code ec;
            std::tie(ec) = co_await ws.close(1000, "", corows::use_tuple);
            BOOST_TEST(!ec, ec.message());
            BOOST_TEST(ws.close_code() == 1000);
            auto m = co_await ws.read_message();
            BOOST_TEST(!m.has_value());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            // Data the peer had in flight before it saw our close, then its answer.
            co_await p.send(concat(client_frame(0x1, "in flight"), client_frame(0x2, "more"),
                                    client_frame(0x8, close_payload(1000))));
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof);
        });
}

// A server writes one 8 MiB message in 16 KiB fragments (from the caller's memory) to a
// client that is not reading yet; meanwhile the close handshake starts, from our side or the
// peer's. The close frame must follow the message's last fragment, never precede one.
void close_during_fragmented_write(bool peer_starts) {
    options o;
    o.frame_size = 16 * 1024;
    constexpr std::size_t size = 8 * 1024 * 1024;
    bool write_finished = false;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            using namespace asio::experimental::awaitable_operators;
            co_await ws.accept();
            bytes big(size, 0x42);
            auto writer = [&]() -> asio::awaitable<void> {
                co_await ws.write_binary(big);
                write_finished = true;
            };
            auto closer = [&]() -> asio::awaitable<void> {
                co_await sleep(milliseconds(50));
                if (peer_starts) {
                    auto m = co_await ws.read_message(); // sees the peer's close
                    BOOST_TEST(!m.has_value());
                } else {
                    co_await ws.close(1000, "mid-write");
                }
            };
            co_await (writer() && closer());
            BOOST_TEST(ws.close_code() == (peer_starts ? 4002 : 1000));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            if (peer_starts) co_await p.send(client_frame(0x8, close_payload(4002)));
            co_await sleep(milliseconds(150));
            BOOST_TEST(!write_finished, "the peer's buffers took 8 MiB: the test proves nothing");
            std::size_t data = 0, fragments = 0;
            bool fin_seen = false, data_after_close = false, close_seen = false;
            for (;;) {
                auto f = co_await p.read_frame();
                if (!f) break;
                if (f->op == 0x8) {
                    close_seen = true;
                    close_info c = parse_close(*f);
                    BOOST_TEST(c.code == (peer_starts ? 4002 : 1000));
                    if (!peer_starts) co_await p.send(client_frame(0x8, close_payload(1000)));
                    continue;
                }
                if (close_seen) data_after_close = true;
                BOOST_TEST((f->op == (fragments == 0 ? 0x2 : 0x0)));
                data += f->payload.size();
                ++fragments;
                fin_seen = f->fin;
            }
            BOOST_TEST(close_seen);
            BOOST_TEST(!data_after_close, "a data frame followed the close frame");
            BOOST_TEST(fin_seen);
            BOOST_TEST(data == size);
            BOOST_TEST(fragments == size / (16 * 1024));
            BOOST_TEST(p.saw_eof());
        });
    BOOST_TEST(write_finished);
}

BOOST_AUTO_TEST_CASE(our_close_waits_for_a_fragmented_message_to_end) { close_during_fragmented_write(false); }

BOOST_AUTO_TEST_CASE(close_reply_waits_for_a_fragmented_message_to_end) { close_during_fragmented_write(true); }

BOOST_AUTO_TEST_CASE(close_to_a_peer_that_reads_nothing) {
    // The queue is full and the peer reads nothing: close() gives up after the close timeout,
    // the blocked writer is released, and the peer counts as gone (1006).
    options o;
    o.close_timeout = milliseconds(300);
    o.write_queue_limit = 256 * 1024;
    long long took = -1;
    corows::error_code write_ec;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            using namespace asio::experimental::awaitable_operators;
            co_await ws.accept();
            auto writer = [&]() -> asio::awaitable<void> {
                bytes chunk(16 * 1024, 1);
                for (;;) {
                    std::tie(write_ec) = co_await ws.write_message(chunk, corows::message_kind::binary, false, corows::use_tuple);
                    if (write_ec) break;
                }
            };
            auto closer = [&]() -> asio::awaitable<void> {
                co_await sleep(milliseconds(200));
                auto t0 = std::chrono::steady_clock::now();
                corows::error_code ec;
                std::tie(ec) = co_await ws.close(1000, "", corows::use_tuple);
                took = ms_since(t0);
                BOOST_TEST(!ws.is_open());
                BOOST_TEST(ws.close_code() == 1006);
            };
            co_await (writer() && closer());
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await sleep(milliseconds(700));
            std::string rest = co_await p.read_to_end();
            BOOST_TEST(rest.size() > 0u);
        });
    BOOST_TEST(took >= 250);
    BOOST_TEST(took < 1500);
    BOOST_TEST((write_ec == err(error::closed) || write_ec == err(error::timeout)), write_ec.message());
}

// close_code() is the peer's code only: after we fail the connection with 1009, nothing more is
// read, so it stays 0 and closed_why() tells our code.
BOOST_AUTO_TEST_CASE(close_code_stays_0_after_our_1009) {
    options o;
    o.max_message_size = 16;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            message m;
            auto [ec, more] = co_await ws.read_message(m, corows::use_tuple);
            BOOST_TEST(ec == error::message_too_big);
            BOOST_TEST((ec == corows::condition::too_big));
            BOOST_TEST(!more);
            BOOST_TEST(ws.close_code() == 0);
            corows::close_info why = ws.closed_why();
            BOOST_TEST(why.code == 1009);
            BOOST_TEST(!why.remote);
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            co_await p.send(client_frame(0x1, std::string(17, 'x')));
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1009);
            bool eof = co_await expect_eof(p);
            BOOST_TEST(eof, "server did not close TCP");
        });
}

BOOST_AUTO_TEST_CASE(dropped_transport_reports_1006) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            auto m = co_await ws.read_message();
            BOOST_TEST(!m.has_value());
            BOOST_TEST(ws.close_code() == 1006);
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            p.socket().close();
            co_return;
        });
}

BOOST_AUTO_TEST_CASE(a_message_written_before_the_scope_ends_is_delivered) {
    // The websocket is destroyed right after write_text: "bye" still goes, then a 1000 close.
    std::optional<std::string> got;
    std::uint16_t code = 0;
    run_pair({}, {},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            tcp_ws mine(std::move(ws));
            co_await mine.write_text("bye");
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            auto m = co_await ws.read_message();
            if (m) got = std::string(m->text());
            BOOST_TEST(!(co_await ws.read_message()).has_value());
            code = ws.close_code();
        });
    BOOST_TEST(got.value_or("(nothing)") == "bye");
    BOOST_TEST(code == 1000);
}

BOOST_AUTO_TEST_CASE(everything_queued_before_the_scope_ends_is_delivered) {
    // Just under the queue limit (1 MiB), queued without waiting, then the scope ends.
    constexpr int count = 60;
    int received = 0;
    std::uint16_t code = 0;
    run_pair({}, {},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            tcp_ws mine(std::move(ws));
            std::string payload(16 * 1024, 'q');
            for (int i = 0; i < count; ++i) BOOST_REQUIRE(mine.send_text(payload));
            co_return;
        },
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            corows::message m;
            while (co_await ws.read_message(m)) ++received;
            code = ws.close_code();
        });
    BOOST_TEST(received == count);
    BOOST_TEST(code == 1000);
}

BOOST_AUTO_TEST_CASE(destroying_an_open_websocket_closes_it_in_the_background) {
    // Keepalive pings keep a background task alive: the close handshake still ends the
    // connection once the websocket object is gone.
    options o;
    o.ping_interval = milliseconds(30);
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            tcp_ws gone(std::move(ws));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            p.set_timeout(milliseconds(3000));
            bool closed = false;
            for (;;) {
                auto f = co_await p.read_frame();
                if (!f) break;
                if (f->op == 0x9) {
                    co_await p.send(client_frame(0xA, ""));
                } else {
                    BOOST_TEST(f->op == 0x8);
                    BOOST_TEST(f->payload.size() >= 2u);
                    BOOST_TEST((f->payload[0] << 8 | f->payload[1]) == 1000);
                    closed = true;
                    co_await p.send(client_frame(0x8, close_payload(1000)));
                }
            }
            BOOST_TEST(closed);
            BOOST_TEST(p.saw_eof(), "connection still open: " << p.last_error().message());
        });
}

BOOST_AUTO_TEST_CASE(a_destroyed_websocket_gives_up_on_a_silent_peer_after_the_close_timeout) {
    options o;
    o.close_timeout = milliseconds(300);
    long long took = -1;
    run_raw_client(o,
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            tcp_ws gone(std::move(ws));
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            auto t0 = std::chrono::steady_clock::now();
            close_info c = co_await expect_close(p);
            BOOST_TEST(c.code == 1000);
            bool eof = co_await expect_eof(p);
            took = ms_since(t0);
            BOOST_TEST(eof);
        });
    BOOST_TEST(took >= 250);
    BOOST_TEST(took < 3000);
}

BOOST_AUTO_TEST_CASE(abort_drops_the_connection_without_a_close_frame) {
    run_raw_client({},
        [&](tcp_ws& ws) -> asio::awaitable<void> {
            co_await ws.accept();
            co_await ws.write_text("never sent");
            ws.abort();
        },
        [&](raw_peer& p, loop& l) -> asio::awaitable<void> {
            co_await p.upgrade(l.host(), "");
            p.set_timeout(milliseconds(3000));
            for (;;) {
                auto f = co_await p.read_frame();
                if (!f) break;
                BOOST_TEST(f->op != 0x8, "a close frame after abort()");
            }
            BOOST_TEST(p.saw_eof(), "connection still open: " << p.last_error().message());
        });
}

BOOST_AUTO_TEST_SUITE_END()
