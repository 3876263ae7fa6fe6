// SPDX-License-Identifier: BSL-1.0
// The acceptor of corows::server out of descriptors: it pauses rather than spin on EMFILE,
// and serves the client that waited once descriptors are free. Linux only (tests/meson.build:
// linux_only): the test lowers its own limit with prlimit(2), fills it with /dev/null and
// counts descriptors in /proc/self/fd; Windows has no descriptor limit to run out of.
// The case belongs to the admission suite, whose other cases are in admission_test.cpp.

#include <corows/server.hpp>

#include "server_thread.hpp"
#include "test_asio.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/time.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using corows::test::server_thread;
using tcp = asio::ip::tcp;
using tcp_ws = corows::websocket<tcp::socket>;

// A client of the descriptor test: whether it was served, or how it failed.
struct late_client {
    bool served = false;
    std::string failure;
};

// Connects `sock` (opened already), upgrades and gets an echo.
asio::awaitable<void> echo_over(tcp::socket sock, unsigned short port, late_client& c) {
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    tcp_ws ws(std::move(sock));
    co_await ws.handshake("127.0.0.1:" + std::to_string(port));
    const std::string text = "after the drought";
    co_await ws.write_text(text);
    auto m = co_await ws.read_message();
    if (!m || m->text() != text) throw std::runtime_error("no echo of " + text);
    c.served = true;
}

// CPU time of this process so far (every thread), for "the acceptor does not spin".
std::chrono::microseconds process_cpu() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto us = [](const timeval& t) { return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec); };
    return us(u.ru_utime) + us(u.ru_stime);
}

} // namespace

BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(out_of_descriptors_the_acceptor_idles_and_recovers) {
    // prlimit(2) lowers this process's descriptor limit to what it holds, plus a few: the
    // server cannot accept. It must pause rather than spin on EMFILE, and serve the waiting
    // client by itself once descriptors are free again.
    corows::server_options o;
    o.max_connections = 1'000'000; // the refusal path needs descriptors too: test the acceptor's
    server_thread st(o, [](tcp_ws& ws) -> asio::awaitable<void> {
        corows::message m;
        while (co_await ws.read_message(m)) co_await ws.write_message(m);
    });
    const auto port = st.port();
    rlimit saved{};
    BOOST_REQUIRE(prlimit(0, RLIMIT_NOFILE, nullptr, &saved) == 0);
    std::vector<int> fillers;
    struct restore {
        rlimit saved;
        std::vector<int>& fillers;
        ~restore() {
            for (int fd : fillers) ::close(fd);
            prlimit(0, RLIMIT_NOFILE, &saved, nullptr);
        }
    } restorer{saved, fillers};

    asio::io_context ctx;
    tcp::socket client(ctx);
    client.open(tcp::v4()); // before the limit: the client needs a descriptor of its own
    rlimit low = saved;
    low.rlim_cur = corows::test::open_fds() + 64;
    BOOST_REQUIRE(prlimit(0, RLIMIT_NOFILE, &low, nullptr) == 0);
    // Takes every free descriptor; returns how many.
    auto fill = [&] {
        std::size_t n = 0;
        for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0; ++n) fillers.push_back(fd);
        return n;
    };
    fill();
    BOOST_REQUIRE(errno == EMFILE);

    // Whatever another part of the process (a sanitizer's runtime, say) closes while the test
    // waits is taken back at once: the acceptor retries every 50 ms, the test every 5 ms, so
    // only the test's own fillers decide that there is no descriptor. What it took back is
    // counted and reported.
    std::size_t taken_back = 0;
    auto starve_for = [&](std::chrono::milliseconds d) {
        for (auto end = std::chrono::steady_clock::now() + d; std::chrono::steady_clock::now() < end;) {
            ctx.run_for(5ms);
            taken_back += fill();
        }
    };
    // A descriptor another thread held for a moment while fill() ran (the server's start-up,
    // say) is taken back here before the client connects, not handed to the acceptor.
    // (Not starve_for(): with no work yet, ctx would stop, and no later run_for() would run.)
    for (auto end = std::chrono::steady_clock::now() + 100ms; std::chrono::steady_clock::now() < end;) {
        std::this_thread::sleep_for(5ms);
        taken_back += fill();
    }
    const auto freed_before_connect = taken_back;
    late_client c;
    asio::co_spawn(ctx, echo_over(std::move(client), port, c), [&](std::exception_ptr e) {
        if (e) c.failure = corows::test::describe(e);
    });
    starve_for(300ms); // connected (the kernel's queue), not accepted
    BOOST_TEST(!c.served, "served without descriptors; " << taken_back << " freed meanwhile by others, "
                                                          << freed_before_connect << " before the client connected");
    const auto cpu_before = process_cpu();
    starve_for(1000ms);
    const auto cpu = process_cpu() - cpu_before;
    BOOST_TEST((cpu < 200ms), "a second without descriptors cost " << cpu.count() << " us of CPU");
    BOOST_TEST(!c.served, "served without descriptors; " << taken_back << " freed meanwhile by others, "
                                                          << freed_before_connect << " before the client connected");

    for (int fd : fillers) ::close(fd);
    fillers.clear();
    ctx.run_for(3s);
    BOOST_TEST(c.served, "not served once descriptors were free: " << c.failure);
}

BOOST_AUTO_TEST_SUITE_END()
