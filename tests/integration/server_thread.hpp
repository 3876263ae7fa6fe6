// SPDX-License-Identifier: BSL-1.0
// A corows::server on a thread of its own, the process's memory and descriptors as
// /proc/self tells them, and the small client helpers the tests against such a server share.
#pragma once

#include "loopback.hpp"

#include <corows/server.hpp>

#include <boost/test/unit_test.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#ifndef _WIN32
#include <sys/resource.h>
#endif

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <thread>

// AddressSanitizer's and ThreadSanitizer's allocators (quarantine, shadow memory) make RSS
// say nothing about ours: under them only the behaviour is checked.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COROWS_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COROWS_TEST_SANITIZED 1
#endif
#endif
#ifndef COROWS_TEST_SANITIZED
#define COROWS_TEST_SANITIZED 0
#endif

namespace corows::test {

/// True when RSS measures our allocations (no sanitizer allocator in between) and can be
/// read (/proc/self/status).
inline constexpr bool memory_is_measurable = COROWS_TEST_SANITIZED == 0 && corows::detail::has_proc_self;

/// A field of /proc/self/status, in KiB.
inline long status_kib(std::string_view field) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.starts_with(field)) return std::stol(line.substr(field.size()));
    }
    return -1;
}
/// Resident set size now, in KiB.
inline long rss_kib() { return status_kib("VmRSS:"); }
/// Peak resident set size since the last reset_peak_rss(), in KiB.
inline long peak_rss_kib() { return status_kib("VmHWM:"); }
/// Starts a new peak measurement (Linux: "5" resets VmHWM to the current RSS).
inline void reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
}
/// Makes RSS follow live memory: glibc raises its mmap threshold after a large block is
/// freed, and later large blocks then come from the heap, which keeps freed space resident;
/// a fixed threshold sends every large buffer back to the kernel when it is freed.
inline void large_blocks_return_to_the_kernel() {
#if defined(__GLIBC__) && !COROWS_TEST_SANITIZED
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}
/// Gives freed heap memory back to the kernel, so that RSS shows what is still held.
inline void trim_heap() {
#if defined(__GLIBC__) && !COROWS_TEST_SANITIZED
    malloc_trim(0);
#endif
}
/// Open file descriptors of this process.
inline std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}
/// This process's descriptor limit as the operating system reports it, read apart from corows
/// (RLIMIT_NOFILE's soft limit); on Windows, which has none, the fixed 16384 that
/// corows/detail/platform.hpp's descriptor_limit() documents.
inline std::size_t os_descriptor_limit() {
#ifdef _WIN32
    return 16384;
#else
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    return static_cast<std::size_t>(lim.rlim_cur);
#endif
}
/// Raises the soft descriptor limit to the hard one; returns the soft limit.
inline std::size_t raise_fd_limit() {
    return corows::detail::raise_descriptor_limit(std::numeric_limits<std::size_t>::max());
}

/// Selects server_thread's run_http() form.
struct raw_handler {};

/// The two ways a server runs its connections, for tests that run in both: a coroutine
/// handler each (server::run), or event handlers (server::run_events).
enum class server_mode { coroutines, events };

/// `m` as a test's messages name it.
inline const char* name(server_mode m) { return m == server_mode::coroutines ? "coroutines" : "events"; }

/// A corows::server running on its own thread, with a coroutine handler or event handlers;
/// stopped at once and joined at the latest on destruction.
class server_thread {
public:
    using clock_type = std::chrono::steady_clock;

    /// Serves each connection with the coroutine `h` (server::run).
    server_thread(corows::server_options o, corows::server::handler_type h) : srv_(std::move(o)) {
        start([this, h = std::move(h)]() mutable { srv_.run(std::move(h)); });
    }
    /// Serves each connection with the coroutine `h` before its handshake (server::run_http).
    server_thread(corows::server_options o, corows::server::handler_type h, raw_handler)
        : srv_(std::move(o)) {
        start([this, h = std::move(h)]() mutable { srv_.run_http(std::move(h)); });
    }
    /// Serves each connection with event handlers (server::run_events).
    server_thread(corows::server_options o, corows::server::event_handlers h) : srv_(std::move(o)) {
        start([this, h = std::move(h)]() mutable { srv_.run_events(std::move(h)); });
    }
    server_thread(const server_thread&) = delete;
    server_thread& operator=(const server_thread&) = delete;
    ~server_thread() {
        srv_.stop(std::chrono::milliseconds(0));
        thread_.join();
    }

    corows::server& server() noexcept { return srv_; }
    unsigned short port() const noexcept { return port_; }
    std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
    /// Waits at most `limit` for run() to return; true if it did.
    bool wait_returned(std::chrono::milliseconds limit) const {
        auto end = clock_type::now() + limit;
        while (!returned_ && clock_type::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return returned_;
    }
    clock_type::time_point returned_at() const noexcept { return returned_at_; }

private:
    template <class Run>
    void start(Run run) {
        port_ = srv_.listen({asio::ip::make_address("127.0.0.1"), 0}).port();
        thread_ = std::thread([this, run = std::move(run)]() mutable {
            run();
            returned_at_ = clock_type::now();
            returned_ = true;
        });
    }

    corows::server srv_;
    unsigned short port_ = 0;
    std::atomic<bool> returned_{false};
    clock_type::time_point returned_at_{};
    std::thread thread_;
};

/// Waits at most `limit` for `done()`; true if it came.
template <class Pred>
bool wait_until(Pred done, std::chrono::milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return done();
}

/// A raw peer connected to 127.0.0.1:`port`.
inline asio::awaitable<raw_peer> connect_raw_to(unsigned short port) {
    tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    sock.set_option(tcp::no_delay(true));
    co_return raw_peer(std::move(sock));
}

/// A websocket client, handshake done, connected to 127.0.0.1:`port`.
inline asio::awaitable<tcp_ws> connect_ws_to(unsigned short port, const options& o) {
    tcp::socket sock(co_await asio::this_coro::executor);
    co_await sock.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
    tcp_ws ws(std::move(sock), o);
    co_await ws.handshake("127.0.0.1:" + std::to_string(port));
    co_return ws;
}

/// Runs `f(i)` for i < n as coroutines on a fresh io_context for at most `limit`; returns how
/// many finished without an exception, reporting the first exception.
inline std::size_t run_clients(std::size_t n, const std::function<asio::awaitable<void>(std::size_t)>& f,
                               std::chrono::milliseconds limit) {
    asio::io_context ctx;
    std::size_t ok = 0;
    std::string first_error;
    for (std::size_t i = 0; i < n; ++i) {
        asio::co_spawn(ctx, f(i), [&](std::exception_ptr e) {
            if (!e) ++ok;
            else if (first_error.empty()) first_error = describe(e);
        });
    }
    ctx.run_for(limit);
    if (!first_error.empty()) BOOST_ERROR("client: " << first_error);
    return ok;
}

/// A handler that echoes every message until the connection ends.
inline asio::awaitable<void> echo_messages(tcp_ws& ws) {
    message m;
    while (co_await ws.read_message(m)) co_await ws.write_message(m);
}

/// A fresh client gets its message echoed and closes normally: the server still serves.
inline asio::awaitable<void> echo_check(unsigned short port, std::string text) {
    tcp_ws ws = co_await connect_ws_to(port, options{});
    co_await ws.write_text(text);
    auto m = co_await ws.read_message();
    if (!m || m->text() != text) throw std::runtime_error("no echo of " + text);
    co_await ws.close(1000, "");
    if (ws.close_code() != 1000) throw std::runtime_error("close not answered with 1000");
}

} // namespace corows::test
