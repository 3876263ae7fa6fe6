// SPDX-License-Identifier: BSL-1.0
// Echo client: sends each line of standard input as a text message and prints each message
// that comes back on its own line. After the end of input and the last echo it closes (1000)
// and exits 0.
//
//   echo_client [--url ws://127.0.0.1:9001/] [--deflate] [--ca FILE] [--proxy URL]
//
// wss:// URLs verify the server against the system's CAs, or against FILE with --ca.
// --proxy http://[user:password@]host:port (HTTP CONNECT) or socks5[h]://... goes through that
// proxy; without it the environment's is used, as curl does (https_proxy, http_proxy,
// all_proxy, no_proxy).
//
// Autobahn test-client mode, as the Autobahn TestSuite's fuzzing server expects of a client:
//
//   echo_client --autobahn ws://HOST:PORT [--agent NAME] [--timeout SECONDS] [--deflate
//               [--deflate-client-no-context-takeover] [--deflate-server-no-context-takeover]
//               [--deflate-client-max-window-bits N] [--deflate-server-max-window-bits N]]
//
// reads the case count from /getCaseCount, runs /runCase?case=N&agent=NAME for every case,
// echoing each message back with its own kind until the server closes, then asks for
// /updateReports. One line per case: "case N: closed CODE" or "case N: failed: WHY". A case
// that ends in an error is the server's test outcome, not ours: the exit status is 0 once
// every case has run. --timeout (default 30) closes a connection on which nothing arrives for
// that many seconds, and bounds each handshake (at most 10 s).
#include <corows/connect.hpp>

#include <asio/co_spawn.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/ssl/context.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <charconv>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace {

struct settings {
    std::string url = "ws://127.0.0.1:9001/";
    bool deflate = false;
    std::string ca;
    std::string proxy; // empty: the environment's, if any
    // Autobahn mode, when `autobahn` (the fuzzing server's base URL) is set.
    std::string autobahn;
    std::string agent = "corows";
    int timeout_seconds = 30;
    corows::deflate_options offer;
};

int parse_int(std::string_view arg, const std::string& text, int lo, int hi) {
    int v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi)
        throw std::invalid_argument(std::string(arg) + " needs a number in " + std::to_string(lo) + ".." +
                                    std::to_string(hi));
    return v;
}

settings parse_args(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + " needs a value");
            return argv[++i];
        };
        if (arg == "--url") s.url = value();
        else if (arg == "--deflate") s.deflate = true;
        else if (arg == "--ca") s.ca = value();
        else if (arg == "--proxy") s.proxy = value();
        else if (arg == "--autobahn") s.autobahn = value();
        else if (arg == "--agent") s.agent = value();
        else if (arg == "--timeout") s.timeout_seconds = parse_int(arg, value(), 0, 3600);
        else if (arg == "--deflate-client-no-context-takeover") s.offer.client_no_context_takeover = true;
        else if (arg == "--deflate-server-no-context-takeover") s.offer.server_no_context_takeover = true;
        else if (arg == "--deflate-client-max-window-bits")
            s.offer.client_max_window_bits = parse_int(arg, value(), 8, 15);
        else if (arg == "--deflate-server-max-window-bits")
            s.offer.server_max_window_bits = parse_int(arg, value(), 8, 15);
        else throw std::invalid_argument("unknown argument " + std::string(arg));
    }
    s.offer.enabled = s.deflate;
    // The Autobahn server's base URL takes paths of its own.
    while (!s.autobahn.empty() && s.autobahn.back() == '/') s.autobahn.pop_back();
    return s;
}

// Lines of standard input, handed over by a reader thread; touched only on the io_context.
struct input {
    explicit input(asio::any_io_executor ex) : wake(ex, std::chrono::steady_clock::time_point::max()) {}
    std::deque<std::string> lines;
    bool ended = false;
    asio::steady_timer wake; // never expires: cancel() is the wake-up call
};

// Lets the reader thread post only while the io_context exists.
struct gate {
    std::mutex mutex;
    bool open = true;
};

// A blocking read of stdin cannot be cancelled, so it runs on a detached thread that only
// posts what it reads; the process may end while that thread still waits for input.
void start_reading_stdin(asio::any_io_executor ex, std::weak_ptr<input> in, std::shared_ptr<gate> g) {
    std::thread([ex, in, g] {
        auto deliver = [&](std::optional<std::string> line) {
            std::lock_guard lock(g->mutex);
            if (!g->open) return false;
            asio::post(ex, [in, line = std::move(line)]() mutable {
                auto p = in.lock();
                if (!p) return;
                if (line) p->lines.push_back(std::move(*line));
                else p->ended = true;
                p->wake.cancel();
            });
            return true;
        };
        std::string line;
        while (std::getline(std::cin, line)) {
            if (!deliver(std::move(line))) return;
        }
        deliver(std::nullopt);
    }).detach();
}

struct progress {
    std::size_t sent = 0;
    std::size_t received = 0;
    bool input_ended = false;
    bool done() const noexcept { return input_ended && received == sent; }
};

asio::awaitable<void> send_lines(corows::client_websocket& ws, std::shared_ptr<input> in, progress& p) {
    for (;;) {
        if (!in->lines.empty()) {
            std::string line = std::move(in->lines.front());
            in->lines.pop_front();
            ++p.sent;
            co_await ws.write_text(line);
            continue;
        }
        if (in->ended) break;
        std::error_code ec;
        co_await in->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none) co_return; // the receiver gave up
    }
    p.input_ended = true;
    if (p.done()) co_await ws.close(1000, "done");
}

asio::awaitable<void> print_echoes(corows::client_websocket& ws, progress& p) {
    corows::message m;
    while (co_await ws.read_message(m)) {
        std::cout << m.text() << '\n' << std::flush;
        ++p.received;
        if (p.done()) co_await ws.close(1000, "done");
    }
    if (!p.done()) {
        throw std::runtime_error("server closed the connection (" + std::to_string(ws.close_code()) + ") with " +
                                 std::to_string(p.sent - p.received) + " echoes missing");
    }
}

asio::awaitable<void> session(const settings& s, std::shared_ptr<input> in, std::shared_ptr<gate> g) {
    using namespace asio::experimental::awaitable_operators;
    corows::connect_options o;
    o.connection.max_message_size = 64 * 1024 * 1024;
    o.connection.deflate = s.offer;
    o.proxy = s.proxy;
    o.proxy_from_environment = true;
    asio::ssl::context tls(asio::ssl::context::tls_client);
    if (s.ca.empty()) tls.set_default_verify_paths();
    else tls.load_verify_file(s.ca);
    o.tls = &tls;
    corows::client_websocket ws = co_await corows::connect(s.url, o, asio::use_awaitable);
    start_reading_stdin(co_await asio::this_coro::executor, in, std::move(g));
    progress p;
    // Both run until the echoes are all in; if the server goes first, the sender is cancelled.
    co_await (send_lines(ws, in, p) && print_echoes(ws, p));
}

// ---------------------------------------------------------------- Autobahn test-client mode

// Percent-encodes everything but RFC 3986's unreserved characters, for the agent query value.
std::string query_escape(std::string_view v) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : v) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

// How one Autobahn connection ended.
struct outcome {
    std::error_code ec;      // the connect or read error; error::closed after a close handshake
    std::uint16_t code = 0;  // the server's close code (1005: none, 1006: no close frame)
    std::string first_text;  // the first text message when not echoing (/getCaseCount)
    std::string describe() const {
        // Appended, not "literal" + string: GCC 12 -O2 warns falsely (-Wrestrict) on that.
        std::string d = ec == corows::error::closed ? "closed " : "failed: ";
        d += ec == corows::error::closed ? std::to_string(code) : ec.message();
        return d;
    }
};

// Connects to `url`, echoes every message back with its own kind until the connection ends,
// or, with echo off, only reads. Never throws for anything the server does.
asio::awaitable<void> run_connection(std::string url, const corows::options& o, asio::ssl::context& tls, bool echo,
                                     outcome& out) {
    corows::connect_options co;
    co.connection = o;
    co.tls = &tls;
    auto [ec, ws] =
        co_await corows::connect(std::move(url), std::move(co), asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) {
        out.ec = ec;
        co_return;
    }
    corows::message m; // reused across messages: no allocation per echo once warmed up
    bool first = true;
    for (;;) {
        bool more = false;
        std::tie(ec, more) = co_await ws.read_message(m, corows::use_tuple);
        if (!ec && !more) ec = corows::error::closed; // out.ec tells a close from a failure
        if (ec) break;
        if (!echo) {
            if (first && m.is_text()) out.first_text = m.str();
            first = false;
            continue;
        }
        // Queued at once; a write error (the server went away) shows up on the next read.
        co_await ws.write_message(m, corows::use_tuple);
    }
    out.ec = ec;
    out.code = ws.close_code();
}

asio::awaitable<int> run_autobahn(const settings& s, asio::ssl::context& tls) {
    corows::options o;
    // Autobahn's largest messages are 16 MiB; leave room above them.
    o.max_message_size = 64 * 1024 * 1024;
    o.deflate = s.offer;
    // A fuzzing server may go silent at any point: the idle timeout ends such a case, and the
    // handshake timeout (at most 10 s) one that never answers the upgrade.
    o.idle_timeout = std::chrono::seconds(s.timeout_seconds);
    o.handshake_timeout = std::chrono::seconds(s.timeout_seconds > 0 ? std::min(s.timeout_seconds, 10) : 10);
    corows::options plain = o;
    plain.deflate.enabled = false;
    std::string agent = query_escape(s.agent);

    outcome count;
    co_await run_connection(s.autobahn + "/getCaseCount", plain, tls, false, count);
    int cases = -1;
    if (!count.first_text.empty()) {
        const std::string& t = count.first_text;
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), cases);
        if (ec != std::errc{} || end != t.data() + t.size() || cases < 0) cases = -1;
    }
    if (cases < 0) {
        std::string got = count.first_text.empty() ? count.describe() : std::string("got ").append(count.first_text);
        std::cerr << "echo_client: no case count from " << s.autobahn << "/getCaseCount (" << got << ")\n";
        co_return 1;
    }
    std::cout << "cases: " << cases << std::endl;
    for (int n = 1; n <= cases; ++n) {
        outcome r;
        std::string url = s.autobahn + "/runCase?case=" + std::to_string(n) + "&agent=" + agent;
        co_await run_connection(url, o, tls, true, r);
        std::cout << "case " << n << ": " << r.describe() << std::endl;
    }
    outcome report;
    co_await run_connection(s.autobahn + "/updateReports?agent=" + agent, plain, tls, false, report);
    std::cout << "updateReports: " << report.describe() << std::endl;
    co_return report.ec == corows::error::closed ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    try {
        settings s = parse_args(argc, argv);
        asio::io_context ctx;
        if (!s.autobahn.empty()) {
            asio::ssl::context tls(asio::ssl::context::tls_client);
            if (s.ca.empty()) tls.set_default_verify_paths();
            else tls.load_verify_file(s.ca);
            int status = 1;
            asio::co_spawn(ctx, run_autobahn(s, tls), [&](std::exception_ptr e, int rc) {
                status = rc;
                if (!e) return;
                status = 1;
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    std::cerr << "echo_client: " << x.what() << '\n';
                }
            });
            ctx.run();
            return status;
        }
        auto g = std::make_shared<gate>();
        auto in = std::make_shared<input>(ctx.get_executor());
        int status = 1;
        asio::co_spawn(ctx, session(s, in, g), [&](std::exception_ptr e) {
            if (!e) {
                status = 0;
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::cerr << "echo_client: " << x.what() << '\n';
            }
        });
        ctx.run();
        std::lock_guard lock(g->mutex);
        g->open = false;
        return status;
    } catch (const std::exception& e) {
        std::cerr << "echo_client: " << e.what() << '\n';
        return 1;
    }
}
