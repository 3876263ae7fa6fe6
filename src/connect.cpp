// SPDX-License-Identifier: BSL-1.0
// connect(): resolve, TCP (Happy Eyeballs), a proxy's tunnel, TLS and the upgrade, compiled once
// here rather than in every file that connects.
#include <corows/connect.hpp>

#include <corows/detail/close_at_deadline.hpp>
#include <corows/detail/happy_eyeballs.hpp>
#include <corows/detail/proxy_tunnel.hpp>
#include <corows/protocol/proxy.hpp>
#include <corows/protocol/url.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

namespace corows {

/// The TLS context connect() uses when given none: TLS 1.2 or later, trusting the system's
/// default CA store. Created on first use and shared by every connection; a program may add
/// trust anchors to it before connecting.
asio::ssl::context& default_tls_context() {
    struct holder {
        asio::ssl::context ctx{asio::ssl::context::tls_client};
        holder() {
            ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                            asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                            asio::ssl::context::no_tlsv1_1);
            // Without a CA store every server fails verification, which is the safe outcome.
            error_code ignored;
            ctx.set_default_verify_paths(ignored);
        }
    };
    static holder h;
    return h.ctx;
}

namespace detail {
namespace {

// Everything a connect() call was given, owned by the operation so that the caller's
// arguments may be temporaries.
struct connect_request {
    std::string url;
    connect_options opts;
};

// What the connect deadline has to reach: the resolver and the sockets being connected.
struct connect_attempt {
    explicit connect_attempt(client_stream s)
        : stream(std::move(s)), resolver(stream.get_executor()), race(stream.get_executor()),
          deadline(stream.get_executor()) {}
    client_stream stream;
    asio::ip::tcp::resolver resolver;
    happy_eyeballs race;
    close_at_deadline deadline;
    connect_phase phase = connect_phase::resolve;
    std::string tried; // the addresses TCP connect tried, in order
    std::string not_an_address; // an entry of options::resolve that is not one
    asio::ip::tcp::endpoint last;
    proxy_outcome proxy;
};

// Where open_transport() goes: straight to the URL's host, or through a proxy.
struct connect_route {
    const url& target;
    const proxy_url* proxy = nullptr; // nullptr: no proxy
    http_limits limits;                // bound the proxy's answer
    std::chrono::milliseconds attempt_delay{250}; // Happy Eyeballs (connect_options::happy_eyeballs_delay)
    const std::vector<std::string>* pinned = nullptr; // connect_options::resolve, when it applies
};

// connect_options::resolve as endpoints, in its order; invalid_argument, with the culprit in `bad`,
// for an entry that is no address literal.
error_code pinned_endpoints(const std::vector<std::string>& literals, std::uint16_t port,
                                   std::vector<asio::ip::tcp::endpoint>& out, std::string& bad) {
    for (const auto& text : literals) {
        error_code ec;
        // [::1] as well as ::1: URLs and curl write IPv6 literals in brackets.
        std::string_view bare = text;
        if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
        auto address = asio::ip::make_address(std::string(bare), ec);
        if (ec) {
            bad = text;
            return error_code(std::make_error_code(std::errc::invalid_argument));
        }
        out.emplace_back(address, port);
    }
    return {};
}

// Resolve, connect and (for wss) the TLS handshake; the WebSocket handshake is bounded by the
// websocket's own handshake timeout.
asio::awaitable<error_code> open_transport(std::shared_ptr<connect_attempt> a, const connect_route& route,
                                                  std::chrono::milliseconds limit) {
    const url& u = route.target;
    const std::string& dial_host = route.proxy ? route.proxy->host : u.host;
    const std::uint16_t dial_port = route.proxy ? route.proxy->port : u.port;
    a->deadline.arm_after(limit, [w = std::weak_ptr<connect_attempt>(a)] {
        if (auto live = w.lock()) {
            live->resolver.cancel();
            live->race.cancel();
            error_code ignored;
            live->stream.lowest_layer().close(ignored);
        }
    });
    error_code ec;
    std::vector<asio::ip::tcp::endpoint> addresses;
    if (route.pinned && !route.proxy) {
        ec = pinned_endpoints(*route.pinned, dial_port, addresses, a->not_an_address);
    } else {
        // No AI_ADDRCONFIG: it ignores loopback addresses, so "localhost" would not resolve on
        // a machine with no other interface. Unusable addresses just fail and the next is tried.
        auto endpoints = co_await a->resolver.async_resolve(dial_host, std::to_string(dial_port),
                                                            asio::ip::resolver_base::numeric_service,
                                                            asio::redirect_error(asio::use_awaitable, ec));
        for (const auto& e : endpoints) addresses.push_back(e.endpoint());
    }
    if (!ec && !a->deadline.fired()) {
        a->phase = connect_phase::tcp_connect;
        // The winner goes into the stream's TCP socket; for wss:// prepare_tls has already
        // set up the TLS layer above it, which holds no descriptor of its own.
        auto& socket = a->stream.tls() ? a->stream.tls()->next_layer() : *a->stream.plain();
        ec = co_await a->race.connect(std::move(addresses), route.attempt_delay, socket);
        a->tried = a->race.tried();
        if (a->race.attempts() > 0) a->last = a->race.last();
    }
    if (!ec && !a->deadline.fired() && route.proxy) {
        a->phase = connect_phase::proxy;
        // The exchange runs on the TCP socket itself: for wss:// TLS starts once the tunnel is open.
        auto& socket = a->stream.tls() ? a->stream.tls()->next_layer() : *a->stream.plain();
        ec = co_await open_proxy_tunnel(socket, a->resolver, *route.proxy, u, route.limits, a->proxy);
        if (ec && a->proxy.resolving) a->phase = connect_phase::resolve;
    }
    if (!ec && !a->deadline.fired()) {
        if (auto* tls = a->stream.tls()) {
            a->phase = connect_phase::tls_handshake;
            co_await tls->async_handshake(asio::ssl::stream_base::client,
                                          asio::redirect_error(asio::use_awaitable, ec));
        }
    }
    a->deadline.disarm();
    if (a->deadline.fired()) ec = error::timeout;
    if (ec) {
        error_code ignored;
        a->stream.lowest_layer().close(ignored);
    }
    co_return ec;
}

// Sets `s` up to send `u.host` as SNI and to verify the certificate against it.
error_code prepare_tls(client_stream::ssl_stream& s, const url& u) {
    SSL* ssl = s.native_handle();
    // RFC 6066 §3: SNI carries host names only, never address literals.
    if (!u.host_is_ip() && !SSL_set_tlsext_host_name(ssl, u.host.c_str()))
        return error_code(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category());
    // OpenSSL's own name check, rather than a verify callback: a mismatch then shows in
    // SSL_get_verify_result(), which the error message quotes.
    const int named = u.host_is_ip() ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), u.host.c_str())
                                     : SSL_set1_host(ssl, u.host.c_str());
    if (named != 1) return error_code(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category());
    // Set on the stream, not the context: a caller's context may say verify_none, or carry a
    // callback that accepts anything.
    error_code ec;
    s.set_verify_mode(asio::ssl::verify_peer, ec);
    if (!ec) s.set_verify_callback([](bool preverified, asio::ssl::verify_context&) { return preverified; }, ec);
    return ec;
}

/// The sentence connect_error::what() says for `f` failing with `ec`; `url_text` is the proxy's
/// URL (redacted) when `bad_proxy_url`.
std::string describe_failure(const connect_failure& f, error_code ec, std::string_view url_text,
                                    std::chrono::milliseconds limit, bool bad_proxy_url = false) {
    std::string out = "corows::connect: ";
    switch (f.phase) {
    case connect_phase::url:
        out += bad_proxy_url ? "bad proxy URL \"" : "bad URL \"";
        out += url_text;
        out += "\"";
        break;
    case connect_phase::resolve: out += "resolving " + f.peer; break;
    case connect_phase::tcp_connect: out += "TCP connect to " + f.peer; break;
    case connect_phase::tls_handshake: out += "TLS handshake with " + f.peer; break;
    case connect_phase::http_upgrade: out += "WebSocket upgrade with " + f.peer; break;
    case connect_phase::proxy: out += "tunnel through " + f.peer; break;
    }
    if (ec == error::timeout) out += " timed out after " + std::to_string(limit.count()) + " ms (handshake_timeout)";
    else out += " failed: " + ec.message();
    if (!f.detail.empty()) out += " (" + f.detail + ")";
    return out;
}

// The proxy connect() goes through for `u` as `opts` say: its URL text (empty: none) and the
// variable it came from.
proxy_choice choose_proxy(const url& u, const connect_options& opts) {
    if (!opts.proxy.empty()) return {opts.proxy, "connect_options::proxy"};
    if (!opts.proxy_from_environment) return {};
    return proxy_from_environment(u, [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    });
}

asio::awaitable<client_websocket> run_connect(std::shared_ptr<const connect_request> r, error_code* out) {
    auto ex = co_await asio::this_coro::executor;
    error_code ec;
    connect_failure why;
    url u = parse_url(r->url, ec);
    if (ec == url_error::bad_scheme && r->url.starts_with("ws+unix:")) why.detail = "use corows::connect_unix()";
    const std::string host_port = authority_text(u.host, u.port);
    std::string url_text = r->url;
    bool bad_proxy_url = false;
    std::optional<proxy_url> proxy;
    proxy_choice via;
    if (!ec) {
        via = choose_proxy(u, r->opts);
        if (!via.url.empty()) {
            proxy_url p = parse_proxy_url(via.url, ec);
            // The proxy URL, not the target's, is what was wrong; its credentials stay out.
            if (ec) {
                url_text = redact_proxy_url(via.url);
                bad_proxy_url = true;
                why.detail = "from " + via.variable;
            } else {
                proxy = std::move(p);
            }
        }
    }
    // Through a proxy every phase names both: the proxy is what TCP reached, the target what TLS
    // and the upgrade spoke to.
    auto peer_text = [&](const std::string& dialed) { return proxy ? "proxy " + dialed + " for " + host_port : dialed; };
    client_stream stream = !ec && u.secure ? client_stream(ex, r->opts.tls ? *r->opts.tls : default_tls_context())
                                           : client_stream(ex);
    if (!ec) {
        why.phase = connect_phase::tls_handshake;
        why.peer = peer_text(proxy ? proxy->authority() : host_port);
    }
    if (auto* tls = stream.tls()) ec = prepare_tls(*tls, u);
    if (!ec) {
        auto a = std::make_shared<connect_attempt>(std::move(stream));
        const connect_options& o = r->opts;
        const connect_route route{u, proxy ? &*proxy : nullptr, o.connection.http, o.happy_eyeballs_delay,
                                  o.resolve.empty() ? nullptr : &o.resolve};
        ec = co_await open_transport(a, route, o.connection.handshake_timeout);
        why.phase = a->phase;
        if (!a->tried.empty()) {
            const auto addr = endpoint_text(a->last);
            const std::string dialed = proxy ? proxy->authority() : host_port;
            why.peer = peer_text(addr != dialed ? dialed + " (" + addr + ")" : dialed);
        }
        if (ec && a->phase == connect_phase::tcp_connect && a->tried.find(',') != std::string::npos)
            why.detail = "tried " + a->tried;
        if (ec && !a->not_an_address.empty()) why.detail = "connect_options::resolve: not an IP address: " + a->not_an_address;
        if (ec && a->phase == connect_phase::proxy) {
            why.detail = std::move(a->proxy.detail);
            why.response = std::move(a->proxy.response);
        }
        if (ec && a->phase == connect_phase::tls_handshake) {
            if (auto* tls = a->stream.tls()) {
                const long verify = SSL_get_verify_result(tls->native_handle());
                if (verify != X509_V_OK) why.detail = X509_verify_cert_error_string(verify);
            }
        }
        // A proxy nobody named in the code: say where it came from.
        if (ec && proxy && via.variable != "connect_options::proxy" && a->phase != connect_phase::tls_handshake)
            why.detail += (why.detail.empty() ? "proxy from " : "; proxy from ") + via.variable;
        stream = std::move(a->stream);
    }
    client_websocket ws(std::move(stream), r->opts.connection);
    if (r->opts.counters) ws.count_into(*r->opts.counters);
    if (!ec) {
        why.phase = connect_phase::http_upgrade;
        const std::string host = u.host_field();
        http_response res;
        std::tie(ec) = co_await ws.handshake(host, u.target, r->opts.request, res, use_tuple);
        if (ec == error::bad_status) {
            why.detail = "the server answered " + std::to_string(res.status) + " " + res.reason;
            why.response = std::move(res);
        } else if ((ec == error::handshake_closed || ec == error::tls_answer) && !u.secure) {
            why.detail = "is it a TLS port? use wss://";
        }
    }
    if (ec) {
        why.message = describe_failure(why, ec, url_text, r->opts.connection.handshake_timeout, bad_proxy_url);
        if (r->opts.failure) *r->opts.failure = why;
        if (!out) throw connect_error(ec, std::move(why));
    }
    if (out) *out = ec;
    co_return ws;
}

} // namespace

asio::awaitable<client_websocket> start_connect(std::string url, const connect_options& opts, error_code* ec) {
    auto r = std::make_shared<connect_request>();
    r->url = std::move(url);
    r->opts = opts;
    return run_connect(std::move(r), ec);
}

// The connect_options the deprecated overloads mean: options' deprecated client fields, the
// TLS context, the request fields and the failure report they took as arguments.
connect_options legacy_connect_options(const options& opts, asio::ssl::context* tls, const handshake_request& extra,
                                       connect_failure* why) {
    connect_options co;
    co.connection = opts;
    co.tls = tls;
    co.request = extra;
    co.failure = why;
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    co.happy_eyeballs_delay = opts.happy_eyeballs_delay;
    co.resolve = opts.resolve;
    co.proxy = opts.proxy;
    co.proxy_from_environment = opts.proxy_from_environment;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    return co;
}

} // namespace detail

} // namespace corows
