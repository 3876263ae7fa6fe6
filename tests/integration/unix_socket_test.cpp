// SPDX-License-Identifier: BSL-1.0
// WebSocket over Unix domain sockets: corows::unix_server listening on a socket file and
// corows::connect_unix() reaching it with a ws+unix: URL; the errors of a missing, stale or
// taken path.
#include "loopback.hpp"

#include <corows/connect.hpp>
#include <corows/connect_unix.hpp>
#include <corows/server.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using namespace corows::test;
using namespace std::chrono_literals;
using unix_endpoint = asio::local::stream_protocol::endpoint;

// A fresh directory under /tmp (a socket path holds at most 107 bytes, so not a deep one),
// removed with what is left in it.
class temp_dir {
public:
    temp_dir() {
        std::string tmpl = "/tmp/corows-uds-XXXXXX";
        BOOST_REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
        path_ = tmpl;
    }
    ~temp_dir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

bool is_socket_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// A unix_server on a thread of its own that echoes, refusing every target but /chat?room=1
// with 404 (so that a connect proves the target arrived).
class unix_echo_server {
public:
    explicit unix_echo_server(const std::string& path) : srv_(options()) {
        srv_.listen(unix_endpoint(path));
        thread_ = std::thread([this] {
            srv_.run([](corows::unix_websocket& ws) -> asio::awaitable<void> {
                corows::message m;
                while (co_await ws.read_message(m)) co_await ws.write_message(m);
            });
        });
    }
    unix_echo_server(const unix_echo_server&) = delete;
    unix_echo_server& operator=(const unix_echo_server&) = delete;
    ~unix_echo_server() {
        srv_.stop(1s);
        thread_.join();
    }

private:
    static corows::server_options options() {
        corows::server_options o;
        o.threads = 2; // round-robin from one acceptor: SO_REUSEPORT is TCP's
        o.on_upgrade = [](const corows::http_request& req) {
            return req.target == "/chat?room=1" ? corows::upgrade_answer{} : corows::upgrade_answer::refuse(404);
        };
        return o;
    }
    corows::unix_server srv_;
    std::thread thread_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(unix_socket)

BOOST_AUTO_TEST_CASE(echo_over_a_unix_socket_then_close_1000_and_the_file_is_removed) {
    temp_dir dir;
    const std::string path = dir.file("ws.sock");
    {
        unix_echo_server server(path);
        BOOST_TEST(is_socket_file(path));
        loop l;
        l.spawn("client", [&]() -> asio::awaitable<void> {
            auto ws = co_await corows::connect_unix("ws+unix://" + path + ":/chat?room=1");
            BOOST_TEST(ws.is_open());
            const std::vector<std::string> texts{"hello", std::string(100'000, 'x')};
            for (const auto& text : texts) {
                co_await ws.write_text(text);
                auto m = co_await ws.read_message();
                BOOST_TEST((m && m->text() == text));
            }
            co_await ws.close(1000, "bye");
            BOOST_TEST(ws.close_code() == 1000);
            // Another target is refused by the server's decider: the target went through.
            auto [ec, refused] = co_await corows::connect_unix("ws+unix:" + path + ":/other", corows::connect_options{},
                                                               tokens::as_tuple(asio::use_awaitable));
            BOOST_TEST((ec == corows::error::bad_status), ec.message());
            BOOST_TEST(!refused.is_open());
        });
        l.run(20s);
    }
    BOOST_TEST(!std::filesystem::exists(path));
}

BOOST_AUTO_TEST_CASE(a_missing_socket_file_is_a_clear_error) {
    temp_dir dir;
    const std::string path = dir.file("nobody.sock");
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto [ec, ws] = co_await corows::connect_unix("ws+unix://" + path + ":/", corows::connect_options{},
                                                      tokens::as_tuple(asio::use_awaitable));
        // Asio 1.22's system category maps no errno to std::errc: compare with its own code.
        BOOST_TEST((ec == corows::error_code(ENOENT, asio::error::get_system_category())), ec.message());
        BOOST_TEST(!ws.is_open());
        try {
            co_await corows::connect_unix("ws+unix://" + path + ":/?token=secret");
            BOOST_ERROR("no exception");
        } catch (const corows::system_error& e) {
            const std::string what = e.what();
            BOOST_TEST(what.rfind("corows::connect_unix: connecting to " + path + ": ", 0) == 0u, what);
            BOOST_TEST(what.find("secret") == std::string::npos);
        }
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(a_stale_socket_file_refuses_and_a_taken_path_fails_listen) {
    temp_dir dir;
    const std::string path = dir.file("stale.sock");
    asio::io_context io;
    {
        // A listener that went away without removing its file, as after a crash.
        asio::local::stream_protocol::acceptor a(io, unix_endpoint(path), false);
    }
    BOOST_TEST(is_socket_file(path));
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto [ec, ws] = co_await corows::connect_unix("ws+unix://" + path, corows::connect_options{},
                                                      tokens::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ws.is_open());
        BOOST_TEST((ec == asio::error::connection_refused), ec.message());
    });
    l.run(10s);
    corows::unix_server srv(corows::server_options{});
    try {
        srv.listen(unix_endpoint(path));
        BOOST_ERROR("listen on an existing path succeeded");
    } catch (const corows::system_error& e) {
        BOOST_TEST((e.code() == asio::error::address_in_use), e.code().message());
    }
    // The stale file is the caller's: the server leaves a file it did not create.
    BOOST_TEST(is_socket_file(path));
}

BOOST_AUTO_TEST_CASE(bad_urls_and_connect_point_the_right_way) {
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        const auto as_tuple = tokens::as_tuple(asio::use_awaitable);
        auto [ec, ws] = co_await corows::connect_unix("ws://127.0.0.1/", corows::connect_options{}, as_tuple);
        BOOST_TEST((ec == corows::url_error::bad_scheme), ec.message());
        std::tie(ec, ws) = co_await corows::connect_unix("ws+unix://host/tmp/x.sock", corows::connect_options{}, as_tuple);
        BOOST_TEST((ec == corows::url_error::bad_socket_path), ec.message());
        corows::connect_failure why;
        corows::connect_options co;
        co.failure = &why;
        std::tie(ec, std::ignore) = co_await corows::connect("ws+unix:///tmp/x.sock:/", co, as_tuple);
        BOOST_TEST((ec == corows::url_error::bad_scheme), ec.message());
        BOOST_TEST(why.message.find("(use corows::connect_unix())") != std::string::npos, why.message);
    });
    l.run(10s);
}

BOOST_AUTO_TEST_CASE(connect_unix_takes_every_token_and_reports_like_connect) {
    temp_dir dir;
    const std::string path = dir.file("tokens.sock");
    unix_echo_server server(path);
    const std::string url = "ws+unix://" + path + ":/chat?room=1";
    {
        loop l;
        l.spawn("client", [&]() -> asio::awaitable<void> {
            corows::connect_options co;
            co.request.field("X-Test", "1");
            auto a = co_await corows::connect_unix(url, co, asio::use_awaitable);
            BOOST_TEST(a.is_open());
            co_await a.close(1000, "");
            auto b = co_await corows::connect_unix(url, co, tokens::deferred)(asio::use_awaitable);
            BOOST_TEST(b.is_open());
            co_await b.close(1000, "");
            // A refusal: the code through as_tuple, the answer through connect_options::failure.
            corows::connect_failure why;
            co.failure = &why;
            auto [ec, c] = co_await corows::connect_unix("ws+unix://" + path + ":/other", co,
                                                         tokens::as_tuple(asio::use_awaitable));
            BOOST_TEST((ec == corows::error::bad_status), ec.message());
            BOOST_TEST(!c.is_open());
            BOOST_TEST((why.phase == corows::connect_phase::http_upgrade));
            BOOST_TEST(why.peer == path);
            BOOST_REQUIRE(why.response.has_value());
            BOOST_TEST(why.response->status == 404u);
            // use_awaitable throws connect_error with the same parts.
            try {
                co_await corows::connect_unix("ws+unix://" + dir.file("none.sock") + ":/", corows::connect_options{},
                                              asio::use_awaitable);
                BOOST_ERROR("no exception");
            } catch (const corows::connect_error& e) {
                BOOST_TEST((e.code() == corows::error_code(ENOENT, asio::error::get_system_category())));
                BOOST_TEST((e.phase() == corows::connect_phase::tcp_connect));
                BOOST_TEST(e.failure().peer == dir.file("none.sock"));
            }
        });
        l.run(20s);
    }
    // A callback, run on connect_options::executor.
    asio::io_context ctx;
    corows::connect_options co;
    co.executor = ctx.get_executor();
    bool opened = false;
    corows::connect_unix(url, co, [&](corows::error_code ec, corows::unix_websocket ws) {
        opened = !ec && ws.is_open();
        ws.abort();
    });
    ctx.run_for(10s);
    BOOST_TEST(opened);
}

BOOST_AUTO_TEST_SUITE_END()
