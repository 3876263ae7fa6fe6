// Echo client: sends each line of standard input as a text message and prints each message
// that comes back on its own line. After the end of input and the last echo it closes (1000)
// and exits 0.
//
//   echo_client [--url ws://127.0.0.1:9001/] [--deflate] [--ca FILE]
//
// wss:// URLs verify the server against the system's CAs, or against FILE with --ca.
#include <corows/connect.hpp>

#include <asio/co_spawn.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/ssl/context.hpp>
#include <asio/steady_timer.hpp>

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
};

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
        else throw std::invalid_argument("unknown argument " + std::string(arg));
    }
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
    corows::options o;
    o.max_message_size = 64 * 1024 * 1024;
    o.deflate.enabled = s.deflate;
    asio::ssl::context tls(asio::ssl::context::tls_client);
    if (s.ca.empty()) tls.set_default_verify_paths();
    else tls.load_verify_file(s.ca);
    corows::client_websocket ws = co_await corows::connect(s.url, o, tls);
    start_reading_stdin(co_await asio::this_coro::executor, in, std::move(g));
    progress p;
    // Both run until the echoes are all in; if the server goes first, the sender is cancelled.
    co_await (send_lines(ws, in, p) && print_echoes(ws, p));
}

} // namespace

int main(int argc, char** argv) {
    try {
        settings s = parse_args(argc, argv);
        asio::io_context ctx;
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
