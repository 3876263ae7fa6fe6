// SPDX-License-Identifier: BSL-1.0
// corows::tls_stream under basic_server against real TLS peers (Python's ssl, Node's tls,
// openssl s_client) and against peers that forge TLS 1.3 records with the library's own
// sealing: alerts and close_notify reach the wire, negotiated record limits hold after
// OpenSSL is released, and post-handshake messages are read however they are packed. A peer
// program that is not installed makes its test pass with a message instead.
#include "certs.hpp"
#include "forged_records.hpp"
#include "client_connect.hpp"
#include "loopback.hpp"

#include <corows/connect.hpp>
#include <corows/metrics.hpp>
#include <corows/server.hpp>
#include <corows/detail/tls13_records.hpp>
#include <corows/tls_stream.hpp>

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using corows::test::client_context;
using corows::test::forged_records;
using corows::test::log_traffic_secret;
using corows::test::client_options;
using corows::test::loop;
using corows::test::loopback_cert;
using corows::test::sealed;
using corows::test::server_context;
using tcp = asio::ip::tcp;
using asio_tls = asio::ssl::stream<tcp::socket>;
using records = corows::detail::tls13_records;
using content = corows::detail::tls_content;
using namespace std::chrono_literals;
using server_type = corows::basic_server<corows::tls_stream>;
using bytes = std::vector<std::uint8_t>;

/// Runs `command` through the shell; returns what it printed (stdout and stderr).
std::string run_command(const std::string& command) {
    std::string out;
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    BOOST_REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    ::pclose(p);
    return out;
}

/// True if `program` runs; otherwise says why the test passes without it.
bool have(const std::string& program, const std::string& probe) {
    if (std::system((probe + " > /dev/null 2>&1").c_str()) == 0) return true;
    BOOST_TEST_MESSAGE("skipped: " << program << " is not installed");
    return false;
}

/// `text` in a file of the temporary directory, removed with the object.
struct script_file {
    std::filesystem::path path;
    script_file(const std::string& name, const std::string& text)
        : path(std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-" + name)) {
        std::ofstream(path) << text;
    }
    ~script_file() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
};

/// A basic_server<tls_stream> on a thread of its own: a WebSocket echo (run()), or with a
/// raw handler.
struct tls_server {
    asio::ssl::context sctx = server_context(loopback_cert());
    std::unique_ptr<server_type> srv;
    std::thread runner;
    std::uint16_t port = 0;

    explicit tls_server(const std::function<void(SSL_CTX*)>& tune = {}) {
        if (tune) tune(sctx.native_handle());
        srv = std::make_unique<server_type>(corows::server_options{},
                                            [this](tcp::socket s) { return corows::tls_stream(std::move(s), sctx); });
        port = srv->listen({asio::ip::make_address("127.0.0.1"), 0}).port();
    }
    void echo() {
        runner = std::thread([this] {
            srv->run([](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
                corows::message m;
                while (co_await ws.read_message(m)) co_await ws.write_message(m);
            });
        });
    }
    void raw(server_type::handler_type h) {
        runner = std::thread([this, h = std::move(h)]() mutable { srv->run_http(std::move(h)); });
    }
    ~tls_server() {
        srv->stop(1s);
        if (runner.joinable()) runner.join();
    }
};

const char* const python_client = R"(
import base64, os, socket, ssl, sys
port, version = int(sys.argv[1]), sys.argv[2]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, version)
ctx.options &= ~getattr(ssl, 'OP_IGNORE_UNEXPECTED_EOF', 0)  # a FIN alone must not pass for the end
s = ctx.wrap_socket(socket.create_connection(('127.0.0.1', port), timeout=5),
                    server_hostname='localhost', suppress_ragged_eofs=False)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(('GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
           'Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n' % key).encode())
buf = b''
while b'\r\n\r\n' not in buf:
    d = s.recv(4096)
    if not d: sys.exit('FAIL: no upgrade answer')
    buf += d
head, buf = buf.split(b'\r\n\r\n', 1)
if b' 101 ' not in head: sys.exit('FAIL: %r' % head)
def frame(op, payload):
    mask = os.urandom(4)
    return bytes([0x80 | op, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
s.sendall(frame(1, b'hi') + frame(8, b'\x03\xe8bye'))
try:
    while True:
        d = s.recv(4096)
        if not d: break
        buf += d
except ssl.SSLEOFError as e:
    sys.exit('FAIL: the stream ended without close_notify: %s' % e)
if buf[:4] != b'\x81\x02hi' or buf[4] != 0x88: sys.exit('FAIL: got %r' % buf)
try:
    s.unwrap()  # answers their close_notify; the server may be gone by then
except (BrokenPipeError, ConnectionResetError):
    pass
print('OK', s.version() if hasattr(s, 'version') else '')
)";


bytes operator+(bytes a, const bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

/// A NewSessionTicket (RFC 8446 §4.6.1) whose opaque ticket is `size` bytes long.
bytes ticket(std::size_t size) {
    const std::size_t body = 4 + 4 + 2 + 2 + size + 2; // lifetime, age_add, nonce, ticket, extensions
    bytes m{4, static_cast<std::uint8_t>(body >> 16), static_cast<std::uint8_t>(body >> 8),
            static_cast<std::uint8_t>(body), 0, 0, 0x0e, 0x10, 1, 2, 3, 4, 1, 9,
            static_cast<std::uint8_t>(size >> 8), static_cast<std::uint8_t>(size)};
    for (std::size_t i = 0; i < size; ++i) m.push_back(static_cast<std::uint8_t>(i * 7));
    m.push_back(0);
    m.push_back(0);
    return m;
}

/// `pieces` sealed in this order (the operands of + are not).
bytes sealed_in_order(records& r, std::initializer_list<std::string_view> pieces, content type) {
    bytes all;
    for (std::string_view p : pieces) all = std::move(all) + sealed(r, p, type);
    return all;
}

std::string_view text(const bytes& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

/// What one side sees of the other's records: their contents and types, opened in order.
struct opened_records {
    std::vector<std::pair<content, bytes>> list;
    bool clean = true; // every byte formed a record that opened
};

opened_records open_all(records& r, const bytes& wire) {
    opened_records o;
    std::vector<std::uint8_t> room(records::max_plaintext + 1);
    std::span<const std::uint8_t> rest(wire);
    while (!rest.empty()) {
        auto got = r.open(rest, room);
        if (got.st != corows::detail::tls13_opened::status::record) {
            o.clean = false;
            break;
        }
        o.list.emplace_back(got.type, bytes(room.begin(), room.begin() + static_cast<std::ptrdiff_t>(got.plaintext)));
        rest = rest.subspan(got.consumed);
    }
    return o;
}

/// Runs a corows server (OpenSSL released after the upgrade, or kept) against a client that
/// upgrades through OpenSSL and then sends the records `make` seals with its own keys; returns
/// what the server sent after its 101 answer, opened, up to its FIN.
opened_records server_attacked(bool keep, const std::function<bytes(records&)>& make) {
    tls_server s([](SSL_CTX* ctx) { SSL_CTX_set_num_tickets(ctx, 0); }); // the 101 is its only record
    if (keep)
        s.raw([](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
            ws.next_layer().keep_openssl();
            if (!co_await corows::test::read_and_accept(ws)) co_return;
            corows::message m;
            while (co_await ws.read_message(m)) co_await ws.write_message(m);
        });
    else
        s.echo();
    auto cctx = client_context(loopback_cert());
    SSL_CTX_set_keylog_callback(cctx.native_handle(), log_traffic_secret);
    opened_records result;
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        asio_tls c(l.ctx(), cctx);
        co_await c.next_layer().async_connect({asio::ip::make_address("127.0.0.1"), s.port}, asio::use_awaitable);
        co_await c.async_handshake(asio_tls::client, asio::use_awaitable);
        const std::string upgrade = "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        co_await asio::async_write(c, asio::buffer(upgrade), asio::use_awaitable);
        std::string head;
        std::array<char, 1024> buf;
        while (head.find("\r\n\r\n") == std::string::npos)
            head.append(buf.data(), co_await c.async_read_some(asio::buffer(buf), asio::use_awaitable));
        BOOST_REQUIRE(head.find(" 101 ") != std::string::npos);
        // One record each way so far: the request and the 101.
        auto mine = forged_records(c.native_handle(), 1);
        auto wire = make(*mine);
        corows::error_code ec;
        co_await asio::async_write(c.next_layer(), asio::buffer(wire), asio::redirect_error(asio::use_awaitable, ec));
        bytes answer;
        std::array<std::uint8_t, 4096> sink;
        while (!ec) {
            std::size_t n = co_await c.next_layer().async_read_some(asio::buffer(sink),
                                                                    asio::redirect_error(asio::use_awaitable, ec));
            answer.insert(answer.end(), sink.begin(), sink.begin() + static_cast<std::ptrdiff_t>(n));
        }
        result = open_all(*mine, answer);
    });
    l.run(20s);
    return result;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls_peers)

BOOST_AUTO_TEST_CASE(python_sees_close_notify_after_a_clean_close) {
    if (!have("/usr/bin/python3", "/usr/bin/python3 -c 'import ssl'")) return;
    script_file script("close_notify.py", python_client);
    // TLS 1.3 gives OpenSSL up after the upgrade; TLS 1.2 stays in it.
    for (const char* version : {"TLSv1_3", "TLSv1_2"}) {
        BOOST_TEST_CONTEXT(version) {
            tls_server s;
            s.echo();
            const std::string out = run_command("timeout 10 /usr/bin/python3 " + script.path.string() + " " +
                                                std::to_string(s.port) + " " + version);
            BOOST_TEST(out.rfind("OK", 0) == 0, out);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_refused_record_gets_its_alert_before_the_close) {
    struct hostile {
        const char* what;
        std::function<bytes(records&)> make;
        std::uint8_t alert;
        std::uint8_t openssl_alert = 0; // where OpenSSL's own choice differs (0: the same)
    };
    const std::vector<hostile> cases{
        {"a flipped bit in the tag", [](records& r) {
             auto a = sealed(r, "hello");
             a.back() ^= 1;
             return a;
         }, SSL_AD_BAD_RECORD_MAC},
        {"a header announcing more than 2^14 + 256 bytes", [](records&) { return bytes{23, 3, 3, 0x41, 0x01}; },
         SSL_AD_RECORD_OVERFLOW},
        {"an alert of three bytes",
         [](records& r) { return sealed(r, std::string_view("\x01\x00\x00", 3), content::alert); },
         SSL_AD_DECODE_ERROR, SSL_AD_UNEXPECTED_MESSAGE},
        {"a KeyUpdate with data after it in its record",
         [](records& r) { return sealed(r, std::string_view("\x18\x00\x00\x01\x00\x81", 6), content::handshake); },
         SSL_AD_UNEXPECTED_MESSAGE},
        {"a KeyUpdate of two bytes",
         [](records& r) { return sealed(r, std::string_view("\x18\x00\x00\x02\x00\x00", 6), content::handshake); },
         SSL_AD_DECODE_ERROR, SSL_AD_ILLEGAL_PARAMETER},
    };
    for (bool keep : {false, true}) {
        for (const auto& h : cases) {
            BOOST_TEST_CONTEXT((keep ? "OpenSSL kept: " : "OpenSSL released: ") << h.what) {
                auto seen = server_attacked(keep, h.make);
                BOOST_TEST(seen.clean);
                BOOST_REQUIRE(!seen.list.empty());
                BOOST_TEST((seen.list.back().first == content::alert));
                const std::uint8_t alert = keep && h.openssl_alert ? h.openssl_alert : h.alert;
                BOOST_TEST((seen.list.back().second == bytes{2, alert}), "alert " << int(seen.list.back().second.back()));
            }
        }
    }
}

namespace {

/// A TCP relay in front of 127.0.0.1:`to` for one connection, which measures the records
/// coming back from the server: the longest one's length after its header.
struct record_relay {
    asio::io_context ctx;
    tcp::acceptor front{ctx, {asio::ip::make_address("127.0.0.1"), 0}};
    std::atomic<std::size_t> longest{0}, count{0};
    std::thread t;

    explicit record_relay(std::uint16_t to) {
        t = std::thread([this, to] {
            corows::error_code ec;
            tcp::socket c(ctx), s(ctx);
            front.accept(c, ec);
            if (!ec) s.connect({asio::ip::make_address("127.0.0.1"), to}, ec);
            if (ec) return;
            std::thread up([&] { forward(c, s, false); });
            forward(s, c, true);
            up.join();
        });
    }
    void forward(tcp::socket& from, tcp::socket& into, bool measure) {
        std::array<std::uint8_t, 16384> buf;
        bytes pending;
        corows::error_code ec;
        for (;;) {
            const std::size_t n = from.read_some(asio::buffer(buf), ec);
            if (ec) break;
            if (measure) {
                pending.insert(pending.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
                while (pending.size() >= 5) {
                    const std::size_t length = static_cast<std::size_t>(pending[3]) << 8 | pending[4];
                    if (pending.size() < 5 + length) break;
                    longest = std::max<std::size_t>(longest, length);
                    ++count;
                    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(5 + length));
                }
            }
            asio::write(into, asio::buffer(buf.data(), n), ec);
            if (ec) break;
        }
        into.shutdown(tcp::socket::shutdown_send, ec);
    }
    ~record_relay() { t.join(); }
};

} // namespace

BOOST_AUTO_TEST_CASE(openssl_s_client_with_max_fragment_length_and_key_updates) {
    if (!have("openssl s_client", "openssl version")) return;
    std::atomic<int> released{0};
    tls_server s;
    // Echoes what comes, and answers "big" with 3000 bytes: six records of 512 at most.
    s.raw([&released](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
        auto& t = ws.next_layer();
        t.release_openssl();
        if (t.openssl_released()) ++released;
        std::array<char, 4096> buf;
        corows::error_code ec;
        for (;;) {
            const std::size_t n = co_await t.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
            const std::string in(buf.data(), n);
            const std::string out = in.find("big") != std::string::npos ? std::string(3000, 'x') + "\n" : in;
            co_await asio::async_write(t, asio::buffer(out), asio::redirect_error(asio::use_awaitable, ec));
            if (ec) break;
        }
    });
    record_relay relay(s.port);
    // K asks for the server's KeyUpdate in return, k does not.
    const std::string out = run_command(
        "(printf 'hello\\n'; sleep 0.3; printf 'K\\n'; sleep 0.3; printf 'after-K\\n'; sleep 0.3; printf 'k\\n'; "
        "sleep 0.3; printf 'after-k\\n'; sleep 0.3; printf 'big\\n'; sleep 0.5) | timeout 10 openssl s_client -connect 127.0.0.1:" +
        std::to_string(relay.front.local_endpoint().port()) + " -tls1_3 -maxfraglen 512 -servername localhost");
    BOOST_TEST(released == 1);
    BOOST_TEST(out.find("hello\n") != std::string::npos, out);
    BOOST_TEST(out.find("after-K\n") != std::string::npos);
    BOOST_TEST(out.find("after-k\n") != std::string::npos);
    BOOST_TEST(out.find(std::string(3000, 'x') + "\n") != std::string::npos);
    BOOST_TEST(out.find("alert") == std::string::npos);
    // RFC 6066 §4: ciphertext of at most 512 bytes of content and its record overhead.
    BOOST_TEST(relay.longest <= 512u + 256u);
    BOOST_TEST(relay.count >= 6u);
}

BOOST_AUTO_TEST_CASE(a_context_that_pads_records_keeps_openssl) {
    // OpenSSL pads; the records outside it would not: the connection stays in OpenSSL.
    std::atomic<int> released{0}, served{0};
    tls_server s([](SSL_CTX* ctx) { SSL_CTX_set_block_padding(ctx, 64); });
    s.raw([&](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
        if (!co_await corows::test::read_and_accept(ws)) co_return;
        ws.next_layer().release_openssl();
        if (ws.next_layer().openssl_released()) ++released;
        corows::message m;
        while (co_await ws.read_message(m)) {
            ++served;
            co_await ws.write_message(m);
        }
    });
    auto cctx = client_context(loopback_cert());
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ws = co_await corows::connect("wss://localhost:" + std::to_string(s.port) + "/", client_options(corows::options{}, &cctx));
        const std::vector<std::uint8_t> payload(5000, 'p');
        co_await ws.write_message(payload, corows::message_kind::binary);
        auto m = co_await ws.read_message();
        BOOST_REQUIRE(m.has_value());
        BOOST_TEST(m->data().size() == 5000u);
        co_await ws.close(1000, "bye");
    });
    l.run(20s);
    BOOST_TEST(served == 1);
    BOOST_TEST(released == 0);
}

namespace {

/// A server whose OpenSSL does the handshake (and sends no ticket) and which then sends the
/// records `make` seals with its own keys, against a corows::tls_stream client that asked to
/// give OpenSSL up. With `read_first` the client reads (under OpenSSL) before it waits, so
/// that OpenSSL handles the first record and the release follows it. Returns what the client
/// read, and the error its reading ended with.
std::pair<std::string, corows::error_code> client_attacked(bool read_first,
                                                           const std::function<bytes(records&)>& first,
                                                           const std::function<bytes(records&)>& rest) {
    auto sctx = server_context(loopback_cert());
    SSL_CTX_set_num_tickets(sctx.native_handle(), 0);
    SSL_CTX_set_keylog_callback(sctx.native_handle(), log_traffic_secret);
    auto cctx = client_context(loopback_cert());
    std::string got;
    corows::error_code read_ec;
    corows::test::event first_handled;
    loop l;
    l.spawn("server", [&]() -> asio::awaitable<void> {
        asio_tls s(co_await l.acceptor().async_accept(asio::use_awaitable), sctx);
        co_await s.async_handshake(asio_tls::server, asio::use_awaitable);
        auto mine = forged_records(s.native_handle(), 0);
        auto one = first(*mine);
        co_await asio::async_write(s.next_layer(), asio::buffer(one), asio::use_awaitable);
        co_await first_handled.wait();
        auto two = rest(*mine);
        two = std::move(two) + sealed(*mine, std::string_view("\x01\x00", 2), content::alert);
        corows::error_code ec;
        co_await asio::async_write(s.next_layer(), asio::buffer(two), asio::redirect_error(asio::use_awaitable, ec));
        std::array<std::uint8_t, 4096> sink;
        while (!ec)
            co_await s.next_layer().async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
    });
    l.spawn("client", [&]() -> asio::awaitable<void> {
        corows::tls_stream c(l.ctx().get_executor(), cctx);
        co_await c.next_layer().async_connect(l.endpoint(), asio::use_awaitable);
        c.release_openssl();
        co_await c.async_handshake(corows::tls_stream::client, asio::use_awaitable);
        std::array<char, 4096> buf;
        if (read_first) {
            // The first record is there once the socket is readable; OpenSSL takes it.
            co_await c.next_layer().async_wait(tcp::socket::wait_read, asio::use_awaitable);
            asio::steady_timer settle(l.ctx(), 50ms);
            co_await settle.async_wait(asio::use_awaitable);
            corows::error_code ec;
            BOOST_TEST(c.read_some(asio::buffer(buf), ec) == 0u);
            BOOST_TEST((ec == asio::error::would_block), ec.message());
        }
        first_handled.set();
        for (;;) {
            co_await c.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, read_ec));
            if (read_ec) break;
            std::size_t n = c.read_some(asio::buffer(buf), read_ec);
            got.append(buf.data(), n);
            if (read_ec == asio::error::would_block) continue;
            if (read_ec) break;
        }
        c.flush_before_close();
    });
    l.run(20s);
    return {got, read_ec};
}

const std::string_view key_update("\x18\x00\x00\x01\x00", 5);

} // namespace

BOOST_AUTO_TEST_CASE(a_released_client_reads_tickets_and_key_updates_however_they_are_packed) {
    struct packing {
        const char* what;
        std::function<bytes(records&)> first, rest;
    };
    const auto hello = [](records& r) { return sealed(r, "hello"); };
    const std::vector<packing> cases{
        {"a ticket and a KeyUpdate in one record", [](records& r) {
             auto b = sealed(r, std::string(text(ticket(40))) + std::string(key_update), content::handshake);
             r.update_write_key();
             return b;
         }, hello},
        {"two tickets in one record, the second's header cut across two more", [](records& r) {
             const auto t = ticket(40) + ticket(30);
             const std::size_t cut = ticket(40).size() + 2;
             return sealed_in_order(r, {text(t).substr(0, cut), text(t).substr(cut, 1), text(t).substr(cut + 1)},
                                    content::handshake);
         }, hello},
        {"a KeyUpdate whose header and body are in records of their own", [](records& r) {
             auto b = sealed_in_order(r, {key_update.substr(0, 4), key_update.substr(4)}, content::handshake);
             r.update_write_key();
             return b;
         }, hello},
    };
    for (bool read_first : {true, false}) {
        for (const auto& p : cases) {
            BOOST_TEST_CONTEXT(p.what << (read_first ? ", read by OpenSSL" : ", after the release")) {
                auto [got, ec] = client_attacked(read_first, p.first, p.rest);
                BOOST_TEST(got == "hello");
                BOOST_TEST((ec == asio::error::eof), ec.message());
            }
        }
    }
}

namespace {

/// A raw-handler server that upgrades, runs `before_release` on OpenSSL's connection, asks
/// for the release and echoes messages; `released` counts the connections that let go.
void release_and_echo(tls_server& s, std::atomic<int>& released, std::function<void(SSL*)> before_release) {
    s.raw([&released, before_release](corows::websocket<corows::tls_stream>& ws) -> asio::awaitable<void> {
        if (!co_await corows::test::read_and_accept(ws)) co_return;
        if (before_release) before_release(ws.next_layer().native_handle());
        ws.next_layer().release_openssl();
        if (ws.next_layer().openssl_released()) ++released;
        corows::message m;
        while (co_await ws.read_message(m)) co_await ws.write_message(m);
    });
}

/// Echoes three messages through `port` with a corows client.
void echo_three(std::uint16_t port) {
    auto cctx = client_context(loopback_cert());
    loop l;
    l.spawn("client", [&]() -> asio::awaitable<void> {
        auto ws = co_await corows::connect("wss://localhost:" + std::to_string(port) + "/", client_options(corows::options{}, &cctx));
        for (std::size_t n : {std::size_t{10}, std::size_t{20000}, std::size_t{3}}) {
            const std::vector<std::uint8_t> payload(n, static_cast<std::uint8_t>(n));
            co_await ws.write_message(payload, corows::message_kind::binary);
            auto m = co_await ws.read_message();
            BOOST_REQUIRE(m.has_value());
            BOOST_TEST(m->data().size() == n);
        }
        co_await ws.close(1000, "bye");
    });
    l.run(20s);
}

} // namespace

BOOST_AUTO_TEST_CASE(read_ahead_on_the_context_does_not_break_the_release) {
    std::atomic<int> released{0};
    tls_server s([](SSL_CTX* ctx) { SSL_CTX_set_read_ahead(ctx, 1); });
    release_and_echo(s, released, {});
    // Read-ahead would let OpenSSL take in records beyond the one it opens; the stream turns
    // it off on connections that may be released, and they still are.
    echo_three(s.port);
    BOOST_TEST(released == 1);
}

BOOST_AUTO_TEST_CASE(a_key_update_openssl_still_owes_keeps_the_connection_in_openssl) {
    std::atomic<int> released{0};
    tls_server s;
    release_and_echo(s, released, [](SSL* ssl) { SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED); });
    echo_three(s.port);
    BOOST_TEST(released == 0);
}

namespace {

const char* const node_client = R"js(// Connects to a corows WebSocket echo server over TLS once per configuration: each TLS 1.3
// suite and TLS 1.2; a 3000-byte message must come back, then the close frame and the end.
const tls = require('tls');
const crypto = require('crypto');
const port = Number(process.argv[2]);
const configs = [['TLSv1.3', 'TLS_AES_128_GCM_SHA256'], ['TLSv1.3', 'TLS_AES_256_GCM_SHA384'],
                 ['TLSv1.3', 'TLS_CHACHA20_POLY1305_SHA256'], ['TLSv1.2', null]];
function frame(op, payload) {
  const mask = crypto.randomBytes(4);
  const head = payload.length < 126 ? Buffer.from([0x80 | op, 0x80 | payload.length])
                                    : Buffer.from([0x80 | op, 0x80 | 126, payload.length >> 8, payload.length & 255]);
  return Buffer.concat([head, mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]))]);
}
function one([version, suite]) {
  return new Promise((resolve, reject) => {
    const opts = {host: '127.0.0.1', port, rejectUnauthorized: false, servername: 'localhost',
                  minVersion: version, maxVersion: version};
    if (suite) opts.ciphers = suite;
    const payload = crypto.randomBytes(3000);
    let got = Buffer.alloc(0);
    let upgraded = false;
    const sock = tls.connect(opts, () => {
      const key = crypto.randomBytes(16).toString('base64');
      sock.write('GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
                 'Sec-WebSocket-Key: ' + key + '\r\nSec-WebSocket-Version: 13\r\n\r\n');
    });
    sock.setTimeout(5000, () => reject(new Error('timeout')));
    sock.on('error', reject);
    sock.on('data', (d) => {
      got = Buffer.concat([got, d]);
      if (!upgraded) {
        const end = got.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!got.subarray(0, end).toString().includes(' 101 ')) return reject(new Error('no 101'));
        got = got.subarray(end + 4);
        upgraded = true;
        sock.write(frame(2, payload));
        sock.write(frame(8, Buffer.from([3, 232])));
      }
    });
    sock.on('end', () => {
      const echo = got.subarray(4, 4 + payload.length);
      if (got[0] !== 0x82 || got[1] !== 126 || !echo.equals(payload)) return reject(new Error('bad echo'));
      if (got[4 + payload.length] !== 0x88) return reject(new Error('no close frame'));
      const cipher = sock.getCipher();
      if (sock.getProtocol() !== version || (suite && cipher.standardName !== suite))
        return reject(new Error('negotiated ' + sock.getProtocol() + ' ' + cipher.standardName));
      console.log('OK', version, cipher.standardName);
      resolve();
    });
  });
}
(async () => {
  for (const c of configs) await one(c);
})().catch((e) => { console.log('FAIL', e.message); process.exit(1); });
)js";

} // namespace

BOOST_AUTO_TEST_CASE(node_clients_with_each_tls13_suite_and_tls12) {
    if (!have("node", "node --version")) return;
    script_file script("suites.js", node_client);
    tls_server s;
    s.echo();
    const std::string out = run_command("timeout 20 node " + script.path.string() + " " + std::to_string(s.port));
    for (const char* suite : {"TLSv1.3 TLS_AES_128_GCM_SHA256", "TLSv1.3 TLS_AES_256_GCM_SHA384",
                              "TLSv1.3 TLS_CHACHA20_POLY1305_SHA256", "TLSv1.2 "})
        BOOST_TEST(out.find(std::string("OK ") + suite) != std::string::npos, suite << ": " << out);
}

BOOST_AUTO_TEST_CASE(the_server_counts_tls_handshakes_their_failures_and_the_alerts_they_sent) {
    // TLS 1.3 only: a client that offers TLS 1.2 at most is answered with protocol_version.
    tls_server s([](SSL_CTX* ctx) { SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION); });
    s.echo();
    auto old_client = client_context(loopback_cert());
    SSL_CTX_set_max_proto_version(old_client.native_handle(), TLS1_2_VERSION);
    auto cctx = client_context(loopback_cert());
    loop l;
    l.spawn("clients", [&]() -> asio::awaitable<void> {
        const tcp::endpoint to{asio::ip::make_address("127.0.0.1"), s.port};
        {
            asio_tls c(l.ctx(), old_client);
            co_await c.next_layer().async_connect(to, asio::use_awaitable);
            corows::error_code ec;
            co_await c.async_handshake(asio_tls::client, asio::redirect_error(asio::use_awaitable, ec));
            BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
        }
        auto ws = co_await corows::connect("wss://localhost:" + std::to_string(s.port) + "/",
                                           client_options(corows::options{}, &cctx), asio::use_awaitable);
        co_await ws.write_text("over TLS 1.3");
        co_await ws.read_message();
        co_await ws.close();
    });
    l.run(20s);
    const auto counted = [&] {
        const auto m = s.srv->metrics();
        return m.tls_handshakes == 1 && m.tls_handshake_failures == 1;
    };
    for (int i = 0; i < 500 && !counted(); ++i) std::this_thread::sleep_for(10ms);
    const auto m = s.srv->metrics();
    BOOST_TEST(m.tls_handshakes == 1u);
    BOOST_TEST(m.tls_handshake_failures == 1u);
    BOOST_TEST(m.tls_alerts_sent[corows::tls_alert_slot(SSL_AD_PROTOCOL_VERSION)] == 1u);
    std::uint64_t alerts = 0;
    for (auto n : m.tls_alerts_sent) alerts += n;
    BOOST_TEST(alerts == 1u);
    BOOST_TEST(m.refused[static_cast<std::size_t>(corows::refusal_reason::tls)] == 1u);
    BOOST_TEST(m.connections.opened == 1u);
    // From accept, the TLS handshake included.
    BOOST_TEST(m.handshake_duration.count() == 1u);
    const std::string text = corows::to_prometheus(m);
    BOOST_TEST(text.find("\ncorows_tls_alerts_sent_total{alert=\"protocol_version\"} 1\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
