// SPDX-License-Identifier: BSL-1.0
// corows::hub on 127.0.0.1 servers: publishing from any thread to subscribers on every server
// thread, order per publisher, the slow-consumer policies, subscribers leaving while messages
// are in flight, ten thousand topics, and connection handles.
#include <corows/hub.hpp>
#include <corows/server.hpp>

#include "hub_protocol.hpp"
#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::test::server_thread;
using corows::test::wait_until;
using tcp_ws = corows::websocket<asio::ip::tcp::socket>;
using corows::test::command;
using corows::test::join;
using corows::test::subscriber;

// A coroutine, so that the options live until the connection is made.
asio::awaitable<tcp_ws> connect(unsigned short port) { co_return co_await corows::test::connect_ws_to(port, {}); }

corows::server_options threads(std::size_t n) {
    corows::server_options o;
    o.threads = n;
    o.reuse_port = false; // round robin: every thread gets connections
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hub)

BOOST_AUTO_TEST_CASE(publish_from_a_foreign_thread_reaches_every_server_thread) {
    corows::hub hub;
    std::mutex m;
    std::set<std::thread::id> server_threads;
    server_thread st(threads(3), [&](tcp_ws& ws) -> asio::awaitable<void> {
        {
            std::lock_guard<std::mutex> lock(m);
            server_threads.insert(std::this_thread::get_id());
        }
        return subscriber(ws, hub);
    });
    constexpr std::size_t clients = 30, messages = 200;
    std::atomic<std::size_t> joined{0};
    std::thread publisher([&] {
        if (!wait_until([&] { return joined == clients + 1; }, 20s)) return;
        for (std::size_t i = 0; i < messages; ++i) hub.publish_text("room", "m" + std::to_string(i));
        hub.publish_text("other", "other-end");
    });
    std::size_t ok = corows::test::run_clients(clients + 1, [&](std::size_t c) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(st.port());
        bool other = c == clients; // in a second room, which must not see the first's messages
        co_await join(ws, other ? "other" : "room");
        ++joined;
        if (other) {
            auto msg = co_await ws.read_message();
            if (!msg || msg->text() != "other-end") throw std::runtime_error("the other room got a message of room");
        } else {
            for (std::size_t i = 0; i < messages; ++i) {
                auto msg = co_await ws.read_message();
                if (!msg || msg->text() != "m" + std::to_string(i))
                    throw std::runtime_error("message " + std::to_string(i) + " missing or out of order");
            }
        }
        co_await ws.close();
    }, 60s);
    publisher.join();
    BOOST_TEST(ok == clients + 1);
    BOOST_TEST(server_threads.size() == 3u);
    BOOST_TEST(wait_until([&] { return hub.topics() == 0; }, 5s), "closed subscribers left topics behind");
}

BOOST_AUTO_TEST_CASE(each_publishers_messages_arrive_in_its_order) {
    corows::hub hub;
    server_thread st(threads(2), [&](tcp_ws& ws) { return subscriber(ws, hub); });
    constexpr std::size_t clients = 10, messages = 500;
    std::atomic<std::size_t> joined{0};
    auto publish = [&](char who) {
        if (!wait_until([&] { return joined == clients; }, 20s)) return;
        for (std::size_t i = 0; i < messages; ++i) hub.publish_text("room", std::string(1, who) + std::to_string(i));
    };
    std::thread a(publish, 'a'), b(publish, 'b');
    std::size_t ok = corows::test::run_clients(clients, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(st.port());
        co_await join(ws, "room");
        ++joined;
        std::size_t next_a = 0, next_b = 0;
        while (next_a + next_b < 2 * messages) {
            auto msg = co_await ws.read_message();
            if (!msg) throw std::runtime_error("closed early");
            std::string t(msg->text());
            std::size_t& next = t[0] == 'a' ? next_a : next_b;
            if (t.substr(1) != std::to_string(next)) throw std::runtime_error("out of order: " + t);
            ++next;
        }
        co_await ws.close();
    }, 60s);
    a.join();
    b.join();
    BOOST_TEST(ok == clients);
}

namespace {

// One fast subscriber and one that stops reading, both on tiny socket buffers and a 64 KiB
// queue; 16 KiB messages are published one at a time, each once the fast one has it.
struct slow_consumer_run {
    std::size_t published = 0;
    std::size_t slow_received = 0;  // what the slow one read afterwards, before the final message
    bool slow_got_final = false;    // a message published after it caught up
    bool slow_server_side_ended = false;
    std::atomic<std::size_t> dropped_notices{0};
    std::mutex m;
    std::string dropped_topic; // under m
    corows::hub_metrics hub;       // after the run
    corows::server_metrics server; // after the run
};

std::uint64_t slow_consumers(const slow_consumer_run& r, corows::slow_consumer p) {
    return r.hub.slow_consumers[static_cast<std::size_t>(p)];
}

void run_slow_consumer(corows::slow_consumer policy, slow_consumer_run& r) {
    corows::hub_options ho;
    ho.on_drop = [&r](const corows::connection_handle& h, std::string_view topic) {
        if (!h.expired()) ++r.dropped_notices;
        std::lock_guard<std::mutex> lock(r.m);
        r.dropped_topic = topic;
    };
    corows::hub hub(ho);
    hub.set_policy("feed", policy);
    corows::server_options so;
    // Room for a few messages: the fast one's last message may still be charged to its queue
    // (its write's completion not yet run) when the next one arrives.
    so.connection.write_queue_limit = 64 * 1024;
    so.connection.close_timeout = 300ms;
    std::atomic<bool> slow_ended{false};
    server_thread st(so, [&](tcp_ws& ws) -> asio::awaitable<void> {
        ws.next_layer().set_option(asio::socket_base::send_buffer_size(4096));
        corows::message m;
        bool slow = false;
        for (;;) {
            auto [e, more] = co_await ws.read_message(m, corows::use_tuple);
            if (e || !more) break;
            std::string cmd(m.text());
            if (cmd == "slow") slow = true;
            else if (cmd.starts_with("join:")) {
                hub.subscribe(ws, cmd.substr(5));
                ws.send_text("joined:" + cmd.substr(5));
            }
        }
        if (slow) slow_ended = true;
    });
    const std::string payload(16 * 1024, 'x');
    constexpr std::size_t messages = 120;
    asio::io_context ctx;
    std::atomic<std::size_t> fast_received{0};
    bool failed = false;
    auto fail = [&](std::exception_ptr e) {
        if (e) {
            failed = true;
            BOOST_ERROR("client: " << corows::test::describe(e));
        }
    };
    asio::co_spawn(ctx, [&]() -> asio::awaitable<void> {
        asio::ip::tcp::socket sock(ctx);
        sock.open(asio::ip::tcp::v4());
        sock.set_option(asio::socket_base::receive_buffer_size(4096));
        co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), st.port()}, asio::use_awaitable);
        tcp_ws slow(std::move(sock));
        co_await slow.handshake(st.host());
        co_await slow.write_text("slow");
        co_await join(slow, "feed");
        tcp_ws fast = co_await connect(st.port());
        co_await join(fast, "feed");
        for (std::size_t i = 0; i < messages; ++i) {
            // The publisher is this test's other thread, as an application's would be.
            std::thread([&hub, i, &payload] { hub.publish_text("feed", std::to_string(i) + payload); }).join();
            auto msg = co_await fast.read_message();
            if (!msg || !msg->text().starts_with(std::to_string(i) + "x"))
                throw std::runtime_error("the fast subscriber lost message " + std::to_string(i));
            ++fast_received;
        }
        r.published = messages;
        r.slow_server_side_ended = wait_until([&] { return slow_ended.load(); }, 100ms);
        if (policy == corows::slow_consumer::close) {
            // Its queue overflowed: the server closed it, and the close timeout ended it.
            asio::steady_timer t(ctx, 2s);
            for (int i = 0; i < 200 && !slow_ended; ++i) {
                t.expires_after(10ms);
                co_await t.async_wait(asio::use_awaitable);
            }
            r.slow_server_side_ended = slow_ended;
            co_return;
        }
        // The slow one reads what reached it, in order, and then a message published now.
        std::size_t last = 0;
        for (;;) {
            using namespace asio::experimental::awaitable_operators;
            asio::steady_timer t(ctx, 500ms);
            auto which = co_await (slow.read_message() || t.async_wait(asio::use_awaitable));
            if (which.index() == 1) break;
            auto& msg = std::get<0>(which);
            if (!msg) throw std::runtime_error("the slow subscriber was closed");
            std::size_t n = std::stoul(std::string(msg->text().substr(0, msg->text().find('x'))));
            if (r.slow_received && n <= last) throw std::runtime_error("the slow subscriber got messages out of order");
            last = n;
            ++r.slow_received;
        }
        std::thread([&hub] { hub.publish_text("feed", "final"); }).join();
        auto final = co_await slow.read_message();
        r.slow_got_final = final && final->text() == "final";
        co_await slow.close();
        co_await fast.close();
    }, fail);
    ctx.run_for(60s);
    BOOST_TEST(!failed);
    BOOST_TEST(fast_received == messages);
    r.hub = hub.metrics();
    r.server = st.server().metrics();
}

} // namespace

BOOST_AUTO_TEST_CASE(a_slow_consumer_is_closed_under_the_close_policy) {
    slow_consumer_run r;
    run_slow_consumer(corows::slow_consumer::close, r);
    BOOST_TEST(r.published == 120u);
    BOOST_TEST(r.slow_server_side_ended, "the slow subscriber was not closed");
    // Counted once (then it takes no more messages), and its ending told apart.
    BOOST_TEST(slow_consumers(r, corows::slow_consumer::close) == 1u);
    BOOST_TEST(r.server.connections.closed_by[static_cast<std::size_t>(corows::ended_by::slow_consumer)] == 1u);
    BOOST_TEST(r.server.connections.closed_by_code[corows::code_slot(1008)] == 1u);
}

BOOST_AUTO_TEST_CASE(a_slow_consumer_misses_messages_under_the_drop_policy) {
    slow_consumer_run r;
    run_slow_consumer(corows::slow_consumer::drop, r);
    BOOST_TEST(r.published == 120u);
    BOOST_TEST(!r.slow_server_side_ended);
    BOOST_TEST(r.slow_received > 0u);
    BOOST_TEST(r.slow_received < 120u, "nothing was dropped: the test did not fill the queue");
    BOOST_TEST(r.slow_got_final, "the slow subscriber did not stay subscribed");
    BOOST_TEST(r.dropped_notices == 0u);
    BOOST_TEST(slow_consumers(r, corows::slow_consumer::drop) == 120u - r.slow_received);
    BOOST_TEST(r.hub.publishes == 121u);
    BOOST_TEST(r.hub.deliveries == 120u + r.slow_received + 2u); // the fast one's, the slow one's, and the final to both
}

BOOST_AUTO_TEST_CASE(a_slow_consumer_is_reported_under_drop_and_notify) {
    slow_consumer_run r;
    run_slow_consumer(corows::slow_consumer::drop_and_notify, r);
    BOOST_TEST(r.published == 120u);
    BOOST_TEST(!r.slow_server_side_ended);
    BOOST_TEST(r.slow_received < 120u);
    BOOST_TEST(r.slow_got_final);
    BOOST_TEST(r.dropped_notices == 120u - r.slow_received);
    BOOST_TEST(slow_consumers(r, corows::slow_consumer::drop_and_notify) == r.dropped_notices);
    BOOST_TEST(slow_consumers(r, corows::slow_consumer::close) == 0u);
    std::lock_guard<std::mutex> lock(r.m);
    BOOST_TEST(r.dropped_topic == "feed");
}

BOOST_AUTO_TEST_CASE(subscribers_closing_while_messages_are_in_flight) {
    corows::hub hub;
    // Room for the whole burst in each queue: here nobody is a slow consumer.
    auto o = threads(3);
    o.connection.write_queue_limit = 16 * 1024 * 1024;
    server_thread st(o, [&](tcp_ws& ws) { return subscriber(ws, hub); });
    constexpr std::size_t clients = 40, messages = 3000;
    std::atomic<std::size_t> joined{0};
    std::atomic<bool> done{false};
    std::thread publisher([&] {
        if (!wait_until([&] { return joined == clients; }, 20s)) return;
        for (std::size_t i = 0; i < messages; ++i) hub.publish_text("room", std::to_string(i));
        done = true;
    });
    std::size_t ok = corows::test::run_clients(clients, [&](std::size_t c) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(st.port());
        co_await join(ws, "room");
        ++joined;
        // Half leave early, at different points, some by closing and some by dropping the
        // connection without a close handshake.
        std::size_t leave_after = c % 2 ? 20 + c * 30 : messages;
        for (std::size_t i = 0; i < leave_after; ++i) {
            auto msg = co_await ws.read_message();
            if (!msg || msg->text() != std::to_string(i)) throw std::runtime_error("lost or reordered " + std::to_string(i));
        }
        if (c % 4 == 1) ws.abort();
        else co_await ws.close();
    }, 60s);
    publisher.join();
    BOOST_TEST(ok == clients);
    BOOST_TEST(done.load());
    BOOST_TEST(wait_until([&] { return hub.topics() == 0; }, 5s), "closed subscribers left topics behind");
}

BOOST_AUTO_TEST_CASE(ten_thousand_topics) {
    corows::hub hub;
    server_thread st(threads(2), [&](tcp_ws& ws) { return subscriber(ws, hub); });
    std::size_t ok = corows::test::run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws a = co_await connect(st.port());
        tcp_ws b = co_await connect(st.port());
        auto check = [](const std::string& got, const std::string& want) {
            if (got != want) throw std::runtime_error("got " + got + ", wanted " + want);
        };
        check(co_await command(a, "join-many:10000"), "joined-many:10000");
        check(co_await command(a, "join:t7"), "already:t7");
        check(co_await command(b, "join-many:10000"), "joined-many:10000");
        if (hub.topics() != 10000) throw std::runtime_error("topics: " + std::to_string(hub.topics()));
        hub.publish_text("t1234", "to 1234");
        hub.publish_text("t9999", "to 9999");
        for (tcp_ws* ws : {&a, &b}) {
            check(std::string((co_await ws->read_message())->text()), "to 1234");
            check(std::string((co_await ws->read_message())->text()), "to 9999");
        }
        check(co_await command(a, "leave:t5"), "left:t5");
        check(co_await command(a, "leave:t5"), "not-subscribed:t5");
        check(co_await command(a, "leave-all"), "left-all:9999");
        if (hub.topics() != 10000) throw std::runtime_error("b's topics went with a's");
        co_await b.close(); // b's 10,000 subscriptions go with its connection
        co_await a.close();
    }, 120s);
    BOOST_TEST(ok == 1u);
    BOOST_TEST(wait_until([&] { return hub.topics() == 0; }, 10s), "topics left: " << hub.topics());
}

BOOST_AUTO_TEST_CASE(a_handle_sends_from_any_thread_and_is_harmless_after_the_connection) {
    std::mutex m;
    std::vector<corows::connection_handle> handles;
    std::atomic<int> ended{0};
    server_thread st(threads(2), [&](tcp_ws& ws) -> asio::awaitable<void> {
        {
            std::lock_guard<std::mutex> lock(m);
            handles.push_back(ws.handle());
        }
        corows::message msg;
        while (co_await ws.read_message(msg)) {
        }
        ++ended;
    });
    std::size_t ok = corows::test::run_clients(1, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(st.port());
        auto handle = [&] {
            std::lock_guard<std::mutex> lock(m);
            return handles.empty() ? corows::connection_handle{} : handles.back();
        };
        // The server registers the handle as its handler starts, just after the 101.
        wait_until([&] { return !handle().expired(); }, 5s);
        bool sent = false;
        std::thread([&] { sent = handle().send_text("from elsewhere"); }).join();
        if (!sent) throw std::runtime_error("send through the handle refused");
        auto msg = co_await ws.read_message();
        if (!msg || msg->text() != "from elsewhere") throw std::runtime_error("handle's message missing");
        const std::vector<std::uint8_t> bytes{0x00, 0xff};
        std::thread([&] { sent = handle().send_binary(bytes); }).join();
        if (!sent) throw std::runtime_error("binary send through the handle refused");
        auto bin = co_await ws.read_message();
        if (!bin || bin->kind() != corows::message_kind::binary ||
            std::vector<std::uint8_t>(bin->data().begin(), bin->data().end()) != bytes)
            throw std::runtime_error("handle's binary message missing");
        std::thread([&] { handle().start_close(4001, "bye"); }).join();
        auto end = co_await ws.read_message();
        if (end || ws.close_code() != 4001 || ws.close_reason() != "bye")
            throw std::runtime_error("handle's close not seen: " + std::to_string(ws.close_code()));
    }, 20s);
    BOOST_TEST(ok == 1u);
    BOOST_TEST(wait_until([&] { return ended == 1; }, 5s));
    std::lock_guard<std::mutex> lock(m);
    BOOST_REQUIRE(handles.size() == 1u);
    BOOST_TEST(wait_until([&] { return handles[0].expired(); }, 5s), "the handle keeps the connection alive");
    BOOST_TEST(!handles[0].send_text("too late"));
    BOOST_TEST(!handles[0].start_close());
    BOOST_TEST(!handles[0].send_binary({}));
    // The deprecated name still works for one release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    BOOST_TEST(!handles[0].close());
#pragma GCC diagnostic pop
    BOOST_TEST(!corows::connection_handle{}.send_text("nowhere"));
}

BOOST_AUTO_TEST_CASE(metrics_count_topics_subscriptions_publishes_and_deliveries) {
    corows::hub hub;
    server_thread st(threads(2), [&](tcp_ws& ws) { return subscriber(ws, hub); });
    constexpr std::size_t clients = 3, messages = 10;
    std::atomic<std::size_t> joined{0};
    corows::hub_metrics during;
    std::thread publisher([&] {
        if (!wait_until([&] { return joined == clients; }, 20s)) return;
        during = hub.metrics();
        for (std::size_t i = 0; i < messages; ++i) hub.publish_text("room", "m" + std::to_string(i));
        hub.publish_text("nobody", "lost"); // a publish without subscribers delivers nothing
    });
    std::size_t ok = corows::test::run_clients(clients, [&](std::size_t) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(st.port());
        co_await join(ws, "room");
        ++joined;
        for (std::size_t i = 0; i < messages; ++i) {
            auto msg = co_await ws.read_message();
            if (!msg || msg->text() != "m" + std::to_string(i)) throw std::runtime_error("message missing");
        }
        co_await ws.close();
    }, 30s);
    publisher.join();
    BOOST_TEST(ok == clients);
    BOOST_TEST(during.topics == 1u);
    BOOST_TEST(during.subscriptions == clients);
    BOOST_TEST(wait_until([&] { return hub.metrics().subscriptions == 0; }, 5s));
    const auto m = hub.metrics();
    BOOST_TEST(m.topics == 0u);
    BOOST_TEST(m.publishes == messages + 1);
    BOOST_TEST(m.deliveries == clients * messages);
    BOOST_TEST(m.slow_consumers == (std::array<std::uint64_t, corows::slow_consumer_policies>{}));
    // Hub deliveries are the server's messages sent, with the "joined:" answers.
    BOOST_TEST(st.server().metrics().connections.messages_sent == clients * messages + clients);
}

BOOST_AUTO_TEST_SUITE_END()
