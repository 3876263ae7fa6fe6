// SPDX-License-Identifier: BSL-1.0
// Several corows servers ("nodes") joined by corows::hub over a real redis-server: every member
// of a room gets every message once, in order per sender, whatever node it is on; Redis dying
// and coming back; a node drained with 1012 while the others keep chatting.
#include <corows/hub.hpp>
#include <corows/redis_backplane.hpp>
#include <corows/server.hpp>

#include "hub_protocol.hpp"
#include "redis_server.hpp"
#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::test::join;
using corows::test::redis_server;
using tcp_ws = corows::websocket<asio::ip::tcp::socket>;

// One server process of a cluster: a server, its hub, and the hub's Redis backplane on the
// server's first thread.
struct node {
    corows::server srv;
    std::shared_ptr<corows::redis_backplane> redis;
    std::optional<corows::hub> hub;
    unsigned short port = 0;
    std::atomic<int> gaps{0};
    std::atomic<bool> returned{false};
    std::thread thread;

    node(unsigned short redis_port, std::size_t threads) : srv(options(threads)) {
        port = srv.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
        corows::redis_options ro;
        ro.port = redis_port;
        ro.reconnect_min = 50ms;
        ro.reconnect_max = 300ms;
        ro.on_gap = [this](std::chrono::steady_clock::duration) { ++gaps; };
        redis = corows::redis_backplane::create(srv.context(0).get_executor(), ro);
        corows::hub_options ho;
        ho.backplane = redis;
        hub.emplace(ho);
        redis->start();
        thread = std::thread([this] {
            srv.run([this](tcp_ws& ws) { return corows::test::subscriber(ws, *hub); });
            returned = true;
        });
    }
    node(const node&) = delete;
    node& operator=(const node&) = delete;
    // The backplane's sockets live on the server's first io_context: they go first.
    ~node() {
        srv.stop(0ms);
        thread.join();
        hub.reset();
        redis.reset();
    }

    static corows::server_options options(std::size_t threads) {
        corows::server_options o;
        o.threads = threads;
        o.reuse_port = false;
        o.connection.write_queue_limit = 16 * 1024 * 1024; // no slow consumers here
        return o;
    }
};

// How many Redis connections subscribe to the channel of `topic`, as redis-cli tells.
int subscribers(const redis_server& r, const std::string& topic) {
    std::string cmd = "redis-cli -p " + std::to_string(r.port()) + " PUBSUB NUMSUB corows:" + topic + " 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
    if (!p) return -1;
    char line[256];
    std::string out;
    while (std::fgets(line, sizeof line, p.get())) out += line;
    auto nl = out.find('\n');
    return nl == std::string::npos ? -1 : std::atoi(out.c_str() + nl + 1);
}

// Waits (asynchronously) until `n` processes subscribe to `topic` in Redis.
asio::awaitable<void> until_subscribed(const redis_server& r, const std::string& topic, int n) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (int i = 0; i < 1000; ++i) {
        if (subscribers(r, topic) == n) co_return;
        t.expires_after(10ms);
        co_await t.async_wait(asio::use_awaitable);
    }
    throw std::runtime_error("Redis never saw " + std::to_string(n) + " subscribers of " + topic);
}

asio::awaitable<void> pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<tcp_ws> connect(unsigned short port) { co_return co_await corows::test::connect_ws_to(port, {}); }

// Reads `n` messages "SENDER-I" and checks that each sender's come in order, once each.
asio::awaitable<std::map<std::string, int>> read_in_order(tcp_ws& ws, std::size_t n) {
    std::map<std::string, int> next;
    for (std::size_t i = 0; i < n; ++i) {
        auto m = co_await ws.read_message();
        if (!m) throw std::runtime_error("closed after " + std::to_string(i) + " messages");
        std::string t(m->text());
        auto dash = t.rfind('-');
        int& expected = next[t.substr(0, dash)];
        if (std::stoi(t.substr(dash + 1)) != expected)
            throw std::runtime_error("got " + t + ", expected number " + std::to_string(expected));
        ++expected;
    }
    co_return next;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(three_nodes_deliver_every_message_once_in_order_per_sender) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server r;
    std::vector<std::unique_ptr<node>> nodes;
    for (int i = 0; i < 3; ++i) nodes.push_back(std::make_unique<node>(r.port(), 2));
    constexpr std::size_t per_node = 3, messages = 100;
    std::atomic<std::size_t> joined{0}, room_done{0};
    // Client c is on node c % 3; the last three are in another room.
    std::size_t ok = corows::test::run_clients(3 * per_node + 3, [&](std::size_t c) -> asio::awaitable<void> {
        tcp_ws ws = co_await connect(nodes[c % 3]->port);
        bool other = c >= 3 * per_node;
        co_await join(ws, other ? "other" : "room");
        ++joined;
        while (joined < 3 * per_node + 3) co_await pause(5ms);
        co_await until_subscribed(r, other ? "other" : "room", 3);
        if (other) {
            while (room_done < 3 * per_node) co_await pause(5ms);
            if (c == 3 * per_node) co_await ws.write_text("say:other:end-0");
            auto got = co_await read_in_order(ws, 1);
            if (got.size() != 1 || !got.count("end")) throw std::runtime_error("the other room got room's messages");
        } else {
            if (c < 3) { // one sender per node
                for (std::size_t i = 0; i < messages; ++i)
                    co_await ws.write_text("say:room:n" + std::to_string(c) + "-" + std::to_string(i));
            }
            auto got = co_await read_in_order(ws, 3 * messages);
            if (got.size() != 3) throw std::runtime_error("not every sender was heard");
            ++room_done;
            // Nothing more may come: a duplicate would.
            asio::steady_timer t(co_await asio::this_coro::executor, 300ms);
            using namespace asio::experimental::awaitable_operators;
            auto extra = co_await (ws.read_message() || t.async_wait(asio::use_awaitable));
            if (extra.index() == 0) throw std::runtime_error("a message came twice");
        }
        co_await ws.close();
    }, 60s);
    BOOST_TEST(ok == 3 * per_node + 3);
    for (auto& n : nodes) BOOST_TEST(n->gaps == 0);
}

BOOST_AUTO_TEST_CASE(redis_restarted_mid_stream_local_delivery_goes_on_and_the_gap_is_reported) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server r;
    node a(r.port(), 1), b(r.port(), 1);
    constexpr int messages = 300;
    std::atomic<int> joined{0};
    std::atomic<bool> sent_all{false};
    std::size_t ok = corows::test::run_clients(4, [&](std::size_t c) -> asio::awaitable<void> {
        bool on_a = c < 2;
        tcp_ws ws = co_await connect(on_a ? a.port : b.port);
        co_await join(ws, "room");
        ++joined;
        while (joined < 4) co_await pause(5ms);
        co_await until_subscribed(r, "room", 2);
        if (c == 0) {
            for (int i = 0; i < messages; ++i) {
                if (i == 100) r.kill();
                if (i == 200) r.restart();
                co_await ws.write_text("say:room:s-" + std::to_string(i));
                co_await pause(3ms);
            }
            sent_all = true;
            // Once both nodes are back and subscribed, the cluster works as before.
            while (a.gaps < 1 || b.gaps < 1) co_await pause(10ms);
            co_await until_subscribed(r, "room", 2);
            co_await ws.write_text("say:room:after-0");
        }
        if (on_a) {
            // The node of the sender delivered everything itself, Redis or not.
            auto got = co_await read_in_order(ws, messages);
            if (got["s"] != messages) throw std::runtime_error("local delivery stopped");
        } else {
            // The other node missed what was published while it was cut off, nothing else,
            // and nothing twice.
            int last = -1;
            for (;;) {
                auto m = co_await ws.read_message();
                if (!m) throw std::runtime_error("closed");
                std::string t(m->text());
                if (t == "after-0") break;
                int n = std::stoi(t.substr(2));
                if (n <= last) throw std::runtime_error("out of order or twice: " + t);
                last = n;
            }
            co_return co_await ws.close();
        }
        auto after = co_await ws.read_message();
        if (!after || after->text() != "after-0") throw std::runtime_error("nothing after Redis came back");
        co_await ws.close();
    }, 60s);
    BOOST_TEST(ok == 4u);
    BOOST_TEST(sent_all.load());
    BOOST_TEST(a.gaps == 1);
    BOOST_TEST(b.gaps == 1);
}

BOOST_AUTO_TEST_CASE(a_node_drained_with_1012_while_the_others_keep_chatting) {
    COROWS_SKIP_WITHOUT_REDIS();
    redis_server r;
    std::vector<std::unique_ptr<node>> nodes;
    for (int i = 0; i < 3; ++i) nodes.push_back(std::make_unique<node>(r.port(), 1));
    constexpr std::size_t per_node = 3;
    constexpr int messages = 20;
    std::atomic<std::size_t> joined{0};
    std::atomic<int> drained_closes{0};
    std::size_t ok = corows::test::run_clients(3 * per_node, [&](std::size_t c) -> asio::awaitable<void> {
        std::size_t n = c % 3;
        tcp_ws ws = co_await connect(nodes[n]->port);
        co_await join(ws, "room");
        ++joined;
        while (joined < 3 * per_node) co_await pause(5ms);
        co_await until_subscribed(r, "room", 3);
        if (c == 1) {
            corows::drain_options d;
            d.window = 1000ms;
            nodes[1]->srv.stop(d);
        }
        if (n == 1) {
            // Closed with 1012 within the window; what came before is whatever the room said.
            while (co_await ws.read_message()) {
            }
            if (ws.close_code() != 1012) throw std::runtime_error("drained with " + std::to_string(ws.close_code()));
            ++drained_closes;
            co_return;
        }
        if (c < 3) { // a sender on each remaining node, talking across the drain window
            for (int i = 0; i < messages; ++i) {
                co_await ws.write_text("say:room:n" + std::to_string(n) + "-" + std::to_string(i));
                co_await pause(60ms);
            }
        }
        auto got = co_await read_in_order(ws, 2 * messages);
        if (got["n0"] != messages || got["n2"] != messages) throw std::runtime_error("a remaining node missed messages");
        co_await ws.close();
    }, 60s);
    BOOST_TEST(ok == 3 * per_node);
    BOOST_TEST(drained_closes == static_cast<int>(per_node));
    BOOST_TEST(corows::test::wait_until([&] { return nodes[1]->returned.load(); }, 10s), "the drained node did not stop");
}

BOOST_AUTO_TEST_SUITE_END()
