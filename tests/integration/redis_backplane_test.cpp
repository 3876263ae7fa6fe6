// SPDX-License-Identifier: BSL-1.0
// corows::redis_backplane against a real redis-server (tests/integration/redis_server.hpp):
// two instances on one io_context stand for two processes. Delivery, kinds and ordering; a
// Redis killed and restarted mid-stream; AUTH; a Unix socket; and a fake "Redis" that
// misbehaves in every way a reader must survive. Skipped when redis-server is not installed.
#include "redis_server.hpp"
#include "test_asio.hpp"

#include <corows/redis_backplane.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::message_kind;
using corows::redis_options;
using corows::test::redis_server;
using clock_type = std::chrono::steady_clock;

struct received {
    std::string topic;
    std::string payload;
    message_kind kind;
};

// What a backplane's sink was handed.
struct inbox {
    std::vector<received> got;

    corows::backplane::sink sink() {
        return [this](std::string_view topic, std::span<const std::uint8_t> payload, message_kind kind) {
            got.push_back({std::string(topic), std::string(payload.begin(), payload.end()), kind});
        };
    }
    std::size_t count(std::string_view topic) const {
        std::size_t n = 0;
        for (const auto& r : got) n += r.topic == topic;
        return n;
    }
};

std::span<const std::uint8_t> bytes(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Runs `io` until `done()` or `limit`; true if done.
template <class Done>
bool run_until(asio::io_context& io, Done done, clock_type::duration limit = 10s) {
    auto give_up = clock_type::now() + limit;
    while (!done()) {
        if (clock_type::now() > give_up) return false;
        io.restart();
        io.run_for(2ms);
        if (io.stopped()) std::this_thread::sleep_for(1ms); // nothing to run yet
    }
    return true;
}

void run_for(asio::io_context& io, clock_type::duration d) {
    auto end = clock_type::now() + d;
    run_until(io, [&] { return clock_type::now() >= end; }, d + 1s);
}

// (The suite's name is the class's: spelled out here.)
using backplane_ptr = std::shared_ptr<corows::redis_backplane>;

backplane_ptr make_backplane(asio::io_context& io, redis_options o) {
    return corows::redis_backplane::create(io.get_executor(), std::move(o));
}

// stop() on each, then the io_context must run out of work: nothing keeps running.
void stop_all(asio::io_context& io, std::initializer_list<backplane_ptr> bs) {
    for (const auto& b : bs) b->stop();
    io.restart();
    io.run_for(5s);
    BOOST_TEST(io.stopped(), "the io_context still has work 5 s after stop()");
    for (const auto& b : bs) BOOST_TEST(!b->connected());
}

// The queue's bytes come off when the socket's write completes, which may be after a
// subscriber has the messages already: wait for it rather than look once.
bool drains(asio::io_context& io, const corows::redis_backplane& b) {
    return run_until(io, [&] { return b.queued_bytes() == 0u; }, 5s);
}

redis_options options_for(const redis_server& srv) {
    redis_options o;
    o.port = srv.port();
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(redis_backplane)

BOOST_AUTO_TEST_CASE(delivers_to_other_processes_with_their_kind_in_order_and_not_back) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server srv;
    asio::io_context io;
    auto a = make_backplane(io, options_for(srv));
    auto b = make_backplane(io, options_for(srv));
    inbox ia, ib;
    a->attach(ia.sink());
    b->attach(ib.sink());
    a->subscribe("t");
    b->subscribe("t");
    b->subscribe("u");
    a->start();
    b->start();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return a->connected() && b->connected(); }));

    // Text and binary arrive as they were sent; "other" (nobody's) is not leaked; a does not
    // get its own publish although it subscribed to "t" too.
    const std::string binary("\x00\x01\xfe\xff\x80", 5);
    a->publish("t", bytes("hello"), message_kind::text);
    a->publish("t", bytes(binary), message_kind::binary);
    a->publish("other", bytes("leak"), message_kind::text);
    a->publish("u", bytes("marker"), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ib.count("u") == 1; }));
    BOOST_TEST_REQUIRE(ib.got.size() == 3u);
    BOOST_TEST(ib.got[0].topic == "t");
    BOOST_TEST(ib.got[0].payload == "hello");
    BOOST_TEST((ib.got[0].kind == message_kind::text));
    BOOST_TEST(ib.got[1].topic == "t");
    BOOST_TEST(ib.got[1].payload == binary);
    BOOST_TEST((ib.got[1].kind == message_kind::binary));
    BOOST_TEST(ib.got[2].payload == "marker");

    // The other way: a hears b, b not itself.
    b->publish("t", bytes("from b"), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ia.got.size() == 1; }));
    BOOST_TEST(ia.got[0].payload == "from b");
    run_for(io, 50ms);
    BOOST_TEST(ib.got.size() == 3u);

    // After unsubscribe, "t" stops at once; "u" (published after it) still comes.
    b->unsubscribe("t");
    a->publish("t", bytes("after"), message_kind::text);
    a->publish("u", bytes("marker 2"), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ib.count("u") == 2; }));
    BOOST_TEST(ib.count("t") == 2u);

    // Many messages, published from another thread, arrive all and in order.
    constexpr int n = 10'000;
    std::thread publisher([&] {
        for (int i = 0; i < n; ++i) {
            auto s = std::to_string(i);
            a->publish("u", bytes(s), i % 2 ? message_kind::binary : message_kind::text);
        }
    });
    bool all = run_until(io, [&] { return ib.count("u") == n + 2; }, 30s);
    publisher.join();
    BOOST_TEST_REQUIRE(all);
    for (int i = 0; i < n; ++i) {
        const auto& r = ib.got[4 + static_cast<std::size_t>(i)];
        BOOST_TEST_REQUIRE(r.payload == std::to_string(i));
        BOOST_TEST_REQUIRE((r.kind == (i % 2 ? message_kind::binary : message_kind::text)));
    }
    BOOST_TEST(a->dropped() == 0u);
    BOOST_TEST(b->malformed() == 0u);
    // a published 3 + 2 + 10,000 (its "other" included: Redis is told of every publish), b
    // received 3 + 1 + 10,000 (its "t" after unsubscribing: none) and a b's one.
    const auto ma = a->metrics(), mb = b->metrics();
    BOOST_TEST(ma.published == 4u + 2u + n);
    BOOST_TEST(mb.published == 1u);
    BOOST_TEST(mb.received == 3u + 1u + n);
    BOOST_TEST(ma.received == 1u);
    BOOST_TEST(ma.connected);
    BOOST_TEST(ma.connection_failures == 0u);
    BOOST_TEST(ma.gaps == 0u);
    BOOST_TEST(drains(io, *a));
    stop_all(io, {a, b});
}

BOOST_AUTO_TEST_CASE(a_redis_restart_queues_publishes_to_the_limit_and_resubscribes) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server srv;
    asio::io_context io;
    // The subscriber comes back first (short backoff), so what the publisher queued has
    // someone to go to when it comes back (its first retry is 1.5-3 s after the loss).
    auto ao = options_for(srv);
    ao.reconnect_min = 3000ms;
    ao.reconnect_max = 6000ms;
    ao.publish_queue_limit = 4096;
    std::vector<clock_type::duration> gaps;
    auto bo = options_for(srv);
    bo.reconnect_min = 20ms;
    bo.reconnect_max = 100ms;
    bo.on_gap = [&](clock_type::duration d) { gaps.push_back(d); };
    std::vector<corows::error_code> b_errors;
    bo.on_error = [&](corows::error_code ec) { b_errors.push_back(ec); };
    std::vector<std::string> b_log; // on io's one thread, as every callback of b
    bo.log.sink = [&](const corows::log_record& r) {
        b_log.push_back(std::string(corows::to_string(r.level)) + " " + std::string(r.message));
    };
    auto a = make_backplane(io, ao);
    auto b = make_backplane(io, bo);
    inbox ib;
    b->attach(ib.sink());
    b->subscribe("t");
    a->start();
    b->start();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return a->connected() && b->connected(); }));
    for (int i = 0; i < 5; ++i) a->publish("t", bytes("before " + std::to_string(i)), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ib.got.size() == 5; }));
    BOOST_TEST(gaps.empty(), "no gap on the first connection");

    auto killed = clock_type::now();
    srv.kill();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return !a->connected() && !b->connected(); }));
    run_for(io, 50ms); // both connections of each have seen the end
    BOOST_TEST(!b_errors.empty(), "the loss is reported");

    // ~130 bytes each as PUBLISH: about 30 fit in 4 KiB, the rest are dropped and counted.
    const std::string pad(80, '.');
    constexpr int outage_publishes = 100;
    for (int i = 0; i < outage_publishes; ++i)
        a->publish("t", bytes("queued " + std::to_string(i) + pad), message_kind::text);
    run_for(io, 10ms);
    auto dropped = a->dropped();
    BOOST_TEST(dropped > 0u);
    BOOST_TEST(dropped < static_cast<std::uint64_t>(outage_publishes));
    BOOST_TEST(a->queued_bytes() <= ao.publish_queue_limit);
    BOOST_TEST(a->queued_bytes() > ao.publish_queue_limit / 2);

    run_for(io, 200ms);
    srv.restart();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return a->connected() && b->connected(); }, 15s));
    auto expected = 5 + outage_publishes - static_cast<int>(dropped);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return static_cast<int>(ib.got.size()) == expected; }));
    for (int i = 0; i < expected - 5; ++i)
        BOOST_TEST_REQUIRE(ib.got[5 + static_cast<std::size_t>(i)].payload == "queued " + std::to_string(i) + pad);
    BOOST_TEST_REQUIRE(drains(io, *a), "the queue empties once the publisher is back");

    // Messages flow again, and the gap was reported once, as long as the outage at least.
    for (int i = 0; i < 5; ++i) a->publish("t", bytes("after " + std::to_string(i)), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return static_cast<int>(ib.got.size()) == expected + 5; }));
    BOOST_TEST(ib.got.back().payload == "after 4");
    run_for(io, 100ms);
    BOOST_TEST_REQUIRE(gaps.size() == 1u);
    auto outage = clock_type::now() - killed;
    BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(gaps[0]).count() >= 200);
    BOOST_TEST((gaps[0] <= outage));
    BOOST_TEST(a->dropped() == dropped);
    const auto mb = b->metrics();
    BOOST_TEST(mb.gaps == 1u);
    BOOST_TEST((mb.gap_time == gaps[0]));
    BOOST_TEST(mb.connection_failures >= 2u); // both of its connections went down at least once
    BOOST_TEST(a->metrics().dropped == dropped);
    std::string text;
    corows::write_prometheus(text, mb);
    BOOST_TEST(text.find("\ncorows_backplane_gaps_total 1\n") != std::string::npos);
    BOOST_TEST(text.find("\ncorows_backplane_connected 1\n") != std::string::npos);
    // Its log told the story: connected, lost, down (each attempt), connected, the gap.
    auto logged = [&](std::string_view start) {
        return std::count_if(b_log.begin(), b_log.end(), [&](const std::string& l) { return l.starts_with(start); });
    };
    BOOST_TEST(logged("info connected to Redis: 1 topics subscribed") == 2);
    BOOST_TEST(logged("warning lost Redis") == 1);
    BOOST_TEST(logged("warning Redis subscribing connection down: ") >= 1);
    BOOST_TEST(logged("warning subscriptions back after ") == 1);
    stop_all(io, {a, b});
}

BOOST_AUTO_TEST_CASE(auth_works_with_the_password_and_backs_off_without_it) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server::settings s;
    s.password = "s3cret";
    redis_server srv(s);
    asio::io_context io;
    auto good = options_for(srv);
    good.password = "s3cret";
    auto good_acl = good;
    good_acl.username = "default"; // AUTH username password (Redis 6 ACL)
    std::vector<corows::error_code> wrong_errors, missing_errors;
    auto wrong = options_for(srv);
    wrong.password = "guess";
    wrong.on_error = [&](corows::error_code ec) { wrong_errors.push_back(ec); };
    auto missing = options_for(srv);
    missing.on_error = [&](corows::error_code ec) { missing_errors.push_back(ec); };

    auto a = make_backplane(io, good);
    auto b = make_backplane(io, good_acl);
    auto c = make_backplane(io, wrong);
    auto d = make_backplane(io, missing);
    inbox ib, ic, id;
    b->attach(ib.sink());
    c->attach(ic.sink());
    d->attach(id.sink());
    for (const auto& x : {b, c, d}) x->subscribe("t");
    auto started = clock_type::now();
    for (const auto& x : {a, b, c, d}) x->start();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return a->connected() && b->connected(); }));
    a->publish("t", bytes("secret message"), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ib.got.size() == 1; }));

    // About a second of refusals: a handful of retries with backoff, not a tight loop.
    run_until(io, [&] { return clock_type::now() - started >= 1200ms; });
    a->publish("t", bytes("secret message 2"), message_kind::text);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ib.got.size() == 2; }));
    run_for(io, 50ms);
    BOOST_TEST(!c->connected());
    BOOST_TEST(!d->connected());
    BOOST_TEST(ic.got.empty());
    BOOST_TEST(id.got.empty());
    BOOST_TEST_MESSAGE("refusals in ~1.2 s: wrong password " << wrong_errors.size() << ", none "
                                                              << missing_errors.size());
    for (auto* errors : {&wrong_errors, &missing_errors}) {
        BOOST_TEST(errors->size() >= 2u);  // both connections, at least once
        BOOST_TEST(errors->size() <= 30u); // backoff: 2 connections x about 5 attempts
        for (const auto& ec : *errors) BOOST_TEST((ec == corows::redis_error::auth_failed), ec.message());
    }
    stop_all(io, {a, b, c, d});
}

BOOST_AUTO_TEST_CASE(connects_over_a_unix_socket) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server::settings s;
    s.unix_socket = true;
    redis_server srv(s);
    asio::io_context io;
    redis_options o;
    o.unix_path = srv.unix_path();
    o.port = 1; // not used: nothing listens there
    auto a = make_backplane(io, o);
    auto b = make_backplane(io, o);
    inbox ia, ib;
    a->attach(ia.sink());
    b->attach(ib.sink());
    a->subscribe("room");
    b->subscribe("room");
    a->start();
    b->start();
    BOOST_TEST_REQUIRE(run_until(io, [&] { return a->connected() && b->connected(); }));
    a->publish("room", bytes("over unix"), message_kind::text);
    b->publish("room", bytes("back"), message_kind::binary);
    BOOST_TEST_REQUIRE(run_until(io, [&] { return ia.got.size() == 1 && ib.got.size() == 1; }));
    BOOST_TEST(ib.got[0].payload == "over unix");
    BOOST_TEST(ia.got[0].payload == "back");
    BOOST_TEST((ia.got[0].kind == message_kind::binary));
    stop_all(io, {a, b});
}

BOOST_AUTO_TEST_CASE(an_io_context_that_stops_first_still_frees_everything) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server srv;
    std::weak_ptr<corows::redis_backplane> left;
    {
        asio::io_context io;
        auto a = make_backplane(io, options_for(srv));
        a->subscribe("t");
        a->start();
        BOOST_TEST_REQUIRE(run_until(io, [&] { return a->connected(); }));
        a->publish("t", bytes("queued at the end"), message_kind::text);
        // As a program that returns from run() and then stops the backplane: the stop is
        // posted to an io_context that no longer runs. Its handlers die with the context.
        io.stop();
        a->stop();
        left = a;
        a.reset();
        BOOST_TEST(!left.expired(), "pending operations hold it until the io_context goes");
    }
    BOOST_TEST(left.expired());
}

namespace {

// A "Redis" on a loopback port that misbehaves; each accepted connection gets the next mode.
class fake_redis {
public:
    enum class mode {
        garbage,         // not RESP at all
        endless_bulk,    // a bulk string announced at 1 GB, then bytes forever
        huge_array,      // "*2147483647": two billion elements announced
        unasked_replies, // answers PING, then floods replies nobody asked for
        silent,          // accepts and never says a word
        goes_quiet,      // answers PING, then stops reading and answering
        count
    };

    explicit fake_redis(asio::io_context& io) : acceptor_(io, {asio::ip::make_address("127.0.0.1"), 0}) {
        asio::co_spawn(io, accept_loop(), asio::detached);
    }

    unsigned short port() const { return acceptor_.local_endpoint().port(); }
    int accepted() const { return accepted_; }
    std::size_t most_bytes_on_one_connection() const { return most_bytes_; }

    void close() {
        closed_ = true;
        corows::error_code ignored;
        acceptor_.close(ignored);
        for (auto& s : sockets_) s->close(ignored);
    }

private:
    using tcp = asio::ip::tcp;

    asio::awaitable<void> accept_loop() {
        while (!closed_) {
            auto [ec, sock] = co_await acceptor_.async_accept(tokens::as_tuple(asio::use_awaitable));
            if (ec) co_return;
            auto s = std::make_shared<tcp::socket>(std::move(sock));
            sockets_.push_back(s);
            auto m = static_cast<mode>(accepted_++ % static_cast<int>(mode::count));
            asio::co_spawn(acceptor_.get_executor(), serve(s, m), asio::detached);
        }
    }

    asio::awaitable<void> write(std::shared_ptr<tcp::socket> s, std::string_view data, std::size_t& total, bool& ok) {
        auto [ec, n] = co_await asio::async_write(*s, asio::buffer(data), tokens::as_tuple(asio::use_awaitable));
        total += n;
        ok = !ec;
    }

    asio::awaitable<void> serve(std::shared_ptr<tcp::socket> s, mode m) {
        std::size_t total = 0;
        bool ok = true;
        std::string chunk;
        switch (m) {
        case mode::garbage:
            co_await write(s, "hello, this is not RESP\r\n", total, ok);
            break;
        case mode::endless_bulk:
            co_await write(s, "$1000000000\r\n", total, ok);
            chunk.assign(64 * 1024, 'x');
            // Bounded here too, so that a reader without a bound fails the test, not the machine.
            while (ok && !closed_ && total < 512u * 1024 * 1024) co_await write(s, chunk, total, ok);
            break;
        case mode::huge_array:
            co_await write(s, "*2147483647\r\n", total, ok);
            for (int i = 0; ok && !closed_ && i < 100'000; ++i) co_await write(s, ":1\r\n", total, ok);
            break;
        case mode::unasked_replies:
            co_await write(s, "+PONG\r\n", total, ok);
            for (int i = 0; i < 16 * 1024; ++i) chunk += ":1\r\n";
            while (ok && !closed_ && total < 512u * 1024 * 1024) co_await write(s, chunk, total, ok);
            break;
        case mode::silent:
            break;
        case mode::goes_quiet:
            co_await write(s, "+PONG\r\n", total, ok);
            break;
        case mode::count:
            break;
        }
        most_bytes_ = std::max(most_bytes_, total);
        // The socket stays open (the backplane is to give up on it) until close().
    }

    tcp::acceptor acceptor_;
    std::vector<std::shared_ptr<tcp::socket>> sockets_; // open until close(), even when silent
    bool closed_ = false;
    int accepted_ = 0;
    std::size_t most_bytes_ = 0;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_misbehaving_server_is_reported_bounded_and_retried) {
    asio::io_context io;
    fake_redis fake(io);
    redis_options o;
    o.port = fake.port();
    o.reconnect_min = 10ms;
    o.reconnect_max = 50ms;
    o.connect_timeout = 300ms;
    o.ping_interval = 100ms;
    o.max_message_size = 64 * 1024; // so a reply is cut at 128 KiB
    std::vector<corows::error_code> errors;
    o.on_error = [&](corows::error_code ec) { errors.push_back(ec); };
    auto b = make_backplane(io, o);
    inbox ib;
    b->attach(ib.sink());
    b->subscribe("t");
    b->start();
    bool ever_connected = false;
    auto enough = [&] {
        ever_connected = ever_connected || b->connected();
        return fake.accepted() >= 3 * static_cast<int>(fake_redis::mode::count);
    };
    BOOST_TEST_REQUIRE(run_until(io, enough, 30s));
    BOOST_TEST(!ever_connected);
    BOOST_TEST(ib.got.empty());

    auto has = [&](corows::error_code want) {
        return std::any_of(errors.begin(), errors.end(), [&](const auto& ec) { return ec == want; });
    };
    BOOST_TEST(has(corows::error_code(corows::make_error_code(corows::redis_error::protocol_error))));
    BOOST_TEST(has(corows::error_code(corows::make_error_code(corows::error::timeout))));
    // An endless reply is cut near the bound: what the kernel buffers besides is far below.
    BOOST_TEST_MESSAGE("most bytes written to one connection: " << fake.most_bytes_on_one_connection());
    BOOST_TEST(fake.most_bytes_on_one_connection() < 64u * 1024 * 1024);
    fake.close(); // first: its acceptor is work for the io_context too
    stop_all(io, {b});
}

BOOST_AUTO_TEST_CASE(envelopes_and_replies_are_checked_before_use) {
    namespace d = corows::detail;
    auto id = d::random_node_id();
    BOOST_TEST((id != d::random_node_id()));
    auto e = d::encode_envelope(id, message_kind::text, bytes("payload"));
    BOOST_TEST(e.size() == d::envelope_header_size + 7);
    auto decoded = d::decode_envelope(bytes(e));
    BOOST_TEST_REQUIRE(decoded.has_value());
    BOOST_TEST((decoded->origin == id));
    BOOST_TEST((decoded->kind == message_kind::text));
    BOOST_TEST(std::string(decoded->payload.begin(), decoded->payload.end()) == "payload");
    BOOST_TEST(!d::decode_envelope(bytes(std::string_view(e).substr(0, d::envelope_header_size - 1))));
    auto bad_version = e;
    bad_version[0] = 2;
    BOOST_TEST(!d::decode_envelope(bytes(bad_version)));
    auto bad_kind = e;
    bad_kind[1] = 2;
    BOOST_TEST(!d::decode_envelope(bytes(bad_kind)));
    BOOST_TEST(d::decode_envelope(bytes(std::string_view(e).substr(0, d::envelope_header_size))).has_value());

    // Replies in pieces, several in one feed.
    d::resp_reader r(1024, 16);
    BOOST_TEST(r.feed(std::span<const char>("*3\r\n$7\r\nmess", 12)));
    BOOST_TEST(!r.next());
    std::string_view rest = "age\r\n$1\r\nc\r\n$2\r\nhi\r\n:5\r\n";
    BOOST_TEST(r.feed(std::span<const char>(rest.data(), rest.size())));
    auto m = r.next();
    BOOST_TEST_REQUIRE(m != nullptr);
    BOOST_TEST(m->elements == 3u);
    BOOST_TEST(d::reply_text(*m->element[2]) == "hi");
    auto i = r.next();
    BOOST_TEST_REQUIRE(i != nullptr);
    BOOST_TEST(i->integer == 5);
    BOOST_TEST(!r.next());
    BOOST_TEST(!r.failed());

    // Over the byte bound: refused before hiredis buffers it.
    d::resp_reader big(1024, 16);
    std::string bulk = "$100000\r\n" + std::string(1000, 'x');
    BOOST_TEST(big.feed(std::span<const char>(bulk.data(), bulk.size())));
    BOOST_TEST(!big.next());
    BOOST_TEST(!big.feed(std::span<const char>(bulk.data(), 100)));
    BOOST_TEST(big.failed());

    // Over the element bound, in one array or across nested ones.
    for (std::string_view bad : {"*2147483647\r\n", "*9\r\n*9\r\n", "*3\r\n:1\r\n:2\r\n*14\r\n"}) {
        d::resp_reader small(1024, 16);
        small.feed(std::span<const char>(bad.data(), bad.size()));
        BOOST_TEST(!small.next());
        BOOST_TEST(small.failed(), bad);
    }
    // Garbage and a bad length are refused by hiredis itself.
    for (std::string_view bad : {"hello\r\n", "$-5\r\n", "$99999999999999999999\r\n"}) {
        d::resp_reader g(1024, 16);
        g.feed(std::span<const char>(bad.data(), bad.size()));
        BOOST_TEST(!g.next());
        BOOST_TEST(g.failed(), bad);
    }

    // Formatting: RESP arrays of bulk strings, binary-safe.
    std::string_view args[] = {"PUBLISH", "ch", std::string_view("a\0b", 3)};
    d::resp_command cmd(args);
    static constexpr char expected[] = "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$3\r\na\0b\r\n";
    BOOST_TEST(std::string(cmd.data(), cmd.size()) == std::string(expected, sizeof expected - 1));
}

BOOST_AUTO_TEST_SUITE_END()
