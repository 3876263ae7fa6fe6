// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/proxy.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using corows::proxy_kind;
using corows::proxy_status;
using corows::proxy_url;
using corows::proxy_url_error;
using bytes = std::vector<std::uint8_t>;

proxy_url parsed(std::string_view text) {
    std::error_code ec;
    proxy_url p = corows::parse_proxy_url(text, ec);
    BOOST_TEST(!ec, text << ": " << ec.message());
    return p;
}

std::error_code error_of(std::string_view text) {
    std::error_code ec;
    proxy_url p = corows::parse_proxy_url(text, ec);
    BOOST_TEST((p == proxy_url{}), text << ": a failed parse returns an empty proxy_url");
    return ec;
}

std::span<const std::uint8_t> span_of(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

bytes to_bytes(std::span<const std::uint8_t> s) { return bytes(s.begin(), s.end()); }

// An environment made of a map, for proxy_from_environment().
corows::env_lookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

corows::url target(std::string_view text) { return corows::parse_url(text); }

// Runs a SOCKS5 handshake against scripted replies, feeding one byte at a time, and returns
// everything the client sent.
bytes run_socks(corows::socks5_handshake& h, const std::vector<bytes>& replies) {
    bytes sent;
    for (const bytes& reply : replies) {
        auto out = h.output();
        sent.insert(sent.end(), out.begin(), out.end());
        h.output_sent();
        for (std::uint8_t b : reply) {
            BOOST_REQUIRE(h.status() == proxy_status::need_more);
            BOOST_REQUIRE(h.need() > 0);
            auto r = h.feed(std::span<const std::uint8_t>(&b, 1));
            BOOST_TEST(r.consumed == 1u);
        }
    }
    auto out = h.output();
    sent.insert(sent.end(), out.begin(), out.end());
    return sent;
}

} // namespace

BOOST_AUTO_TEST_SUITE(proxy)

BOOST_AUTO_TEST_CASE(proxy_urls_parse_with_curls_defaults) {
    proxy_url p = parsed("http://proxy.example.com:3128");
    BOOST_TEST((p.kind == proxy_kind::http));
    BOOST_TEST(p.host == "proxy.example.com");
    BOOST_TEST(p.port == 3128);
    BOOST_TEST(!p.has_credentials);
    BOOST_TEST(parsed("http://proxy").port == 1080);   // curl's default for every kind
    BOOST_TEST(parsed("socks5://proxy").port == 1080);
    BOOST_TEST(parsed("http://proxy:").port == 1080);
    BOOST_TEST((parsed("proxy:8080").kind == proxy_kind::http)); // no scheme: http, as curl
    BOOST_TEST(parsed("proxy:8080").port == 8080);
    BOOST_TEST((parsed("SOCKS5H://Proxy.Example:1").kind == proxy_kind::socks5h));
    BOOST_TEST(parsed("SOCKS5H://Proxy.Example:1").host == "proxy.example");
    BOOST_TEST((parsed("socks5://127.0.0.1:9050").kind == proxy_kind::socks5));
    p = parsed("http://[::1]:3128/");
    BOOST_TEST(p.host == "::1");
    BOOST_TEST(p.authority() == "[::1]:3128");
    BOOST_TEST(parsed("http://10.0.0.1:3128").authority() == "10.0.0.1:3128");
}

BOOST_AUTO_TEST_CASE(user_information_is_percent_decoded) {
    proxy_url p = parsed("http://us%40er:p%3Ass@word@proxy:3128");
    BOOST_TEST(p.has_credentials);
    BOOST_TEST(p.user == "us@er");
    BOOST_TEST(p.password == "p:ss@word"); // the last '@' ends the user information
    BOOST_TEST(p.host == "proxy");
    p = parsed("socks5://alice@proxy");
    BOOST_TEST(p.has_credentials);
    BOOST_TEST(p.user == "alice");
    BOOST_TEST(p.password == "");
}

BOOST_AUTO_TEST_CASE(bad_proxy_urls_say_what_is_wrong) {
    BOOST_TEST((error_of("https://proxy:443") == proxy_url_error::bad_scheme));
    BOOST_TEST((error_of("socks4://proxy") == proxy_url_error::bad_scheme));
    BOOST_TEST((error_of("http://") == proxy_url_error::bad_host));
    BOOST_TEST((error_of("http://user:pw@") == proxy_url_error::bad_host));
    BOOST_TEST((error_of("http://[::1") == proxy_url_error::bad_host));
    BOOST_TEST((error_of("http://[nope]:1") == proxy_url_error::bad_host));
    BOOST_TEST((error_of("http://pro xy:1") == proxy_url_error::bad_host));
    BOOST_TEST((error_of("http://proxy:0") == proxy_url_error::bad_port));
    BOOST_TEST((error_of("http://proxy:65536") == proxy_url_error::bad_port));
    BOOST_TEST((error_of("http://proxy:80a") == proxy_url_error::bad_port));
    BOOST_TEST((error_of("http://u%4:p@proxy") == proxy_url_error::bad_userinfo));
    BOOST_TEST((error_of("http://u:p%zz@proxy") == proxy_url_error::bad_userinfo));
    BOOST_TEST((error_of("http://a%3Ab:p@proxy") == proxy_url_error::bad_userinfo)); // ':' in a Basic user
    BOOST_TEST((error_of("socks5://:p@proxy") == proxy_url_error::bad_userinfo));    // RFC 1929: 1-255
    BOOST_TEST((error_of("socks5h://" + std::string(256, 'u') + ":p@proxy") == proxy_url_error::bad_userinfo));
    BOOST_TEST((error_of("http://proxy:3128/path") == proxy_url_error::path));
    BOOST_TEST((error_of("http://proxy:3128?q") == proxy_url_error::path));
    const std::error_code ec = proxy_url_error::bad_scheme;
    BOOST_TEST(ec.category().name() == std::string("corows.proxy_url"));
    BOOST_TEST(ec.message() == "proxy URL scheme is not http://, socks5:// or socks5h://");
}

BOOST_AUTO_TEST_CASE(redaction_hides_the_credentials_only) {
    BOOST_TEST(corows::redact_proxy_url("http://user:secret@proxy:3128") == "http://***@proxy:3128");
    BOOST_TEST(corows::redact_proxy_url("u:p@w@proxy:3128/") == "***@proxy:3128/");
    BOOST_TEST(corows::redact_proxy_url("socks5h://proxy:1080") == "socks5h://proxy:1080");
}

BOOST_AUTO_TEST_CASE(connect_request_bytes) {
    BOOST_TEST(corows::build_connect_request("example.com", 443, parsed("http://proxy:3128")) ==
               "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    BOOST_TEST(corows::build_connect_request("::1", 8080, parsed("http://proxy")) ==
               "CONNECT [::1]:8080 HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
    // RFC 7617 §2's own example: Aladdin / open sesame.
    BOOST_TEST(corows::build_connect_request("example.com", 80, parsed("http://Aladdin:open%20sesame@proxy")) ==
               "CONNECT example.com:80 HTTP/1.1\r\nHost: example.com:80\r\n"
               "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(a_2xx_answer_opens_the_tunnel_even_byte_by_byte) {
    const std::string answer = "HTTP/1.0 200 Connection established\r\nProxy-agent: test\r\n\r\n";
    corows::http_connect_reader r({}, false);
    for (std::size_t i = 0; i < answer.size(); ++i) {
        BOOST_REQUIRE(r.status() == proxy_status::need_more);
        auto res = r.feed(span_of(std::string_view(answer).substr(i, 1)));
        BOOST_TEST(res.consumed == 1u);
    }
    BOOST_TEST((r.status() == proxy_status::complete));
    BOOST_REQUIRE(r.response().has_value());
    BOOST_TEST(r.response()->status == 200u);
    BOOST_TEST(r.response()->version == 10u);
}

BOOST_AUTO_TEST_CASE(refusals_keep_the_answer_and_name_the_status) {
    corows::http_connect_reader need({}, false);
    need.feed(span_of("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\n"
                      "Content-Length: 5\r\n\r\nhello"));
    BOOST_TEST((need.status() == proxy_status::failed));
    BOOST_TEST((need.error() == corows::error::proxy_auth_failed));
    BOOST_TEST(need.detail() == "the proxy answered 407 Proxy Authentication Required: credentials needed "
                                "(user:password@ in the proxy URL)");
    BOOST_REQUIRE(need.response().has_value());
    BOOST_TEST(need.response()->find("Proxy-Authenticate").value_or("") == "Basic realm=\"x\"");

    corows::http_connect_reader wrong({}, true);
    wrong.feed(span_of("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"));
    BOOST_TEST((wrong.error() == corows::error::proxy_auth_failed));
    BOOST_TEST(wrong.detail() == "the proxy answered 407 Proxy Authentication Required: it rejected the credentials");

    corows::http_connect_reader forbidden({}, false);
    forbidden.feed(span_of("HTTP/1.1 403 Forbidden\r\n\r\n"));
    BOOST_TEST((forbidden.error() == corows::error::proxy_refused));
    BOOST_TEST(forbidden.detail() == "the proxy answered 403 Forbidden");
    BOOST_TEST(forbidden.response()->status == 403u);
}

BOOST_AUTO_TEST_CASE(garbage_oversized_heads_and_early_bytes_are_protocol_errors) {
    corows::http_connect_reader garbage({}, false);
    garbage.feed(span_of("\x05\x00 not http\r\n\r\n"));
    BOOST_TEST((garbage.error() == corows::error::proxy_protocol_error));
    BOOST_TEST(garbage.detail().starts_with("its answer to CONNECT is not a valid HTTP response head"));

    corows::http_limits limits;
    limits.max_head_size = 1024;
    corows::http_connect_reader endless(limits, false);
    const std::string field = "X-Pad: " + std::string(100, 'a') + "\r\n";
    endless.feed(span_of("HTTP/1.1 200 OK\r\n"));
    std::size_t fed = 0;
    while (endless.status() == proxy_status::need_more && fed < 100'000) {
        endless.feed(span_of(field));
        fed += field.size();
    }
    BOOST_TEST((endless.error() == corows::error::proxy_protocol_error));
    BOOST_TEST(fed <= 1024u + field.size());
    BOOST_TEST(endless.detail().find(std::error_code(corows::error::header_too_large).message()) != std::string::npos);

    corows::http_connect_reader early({}, false);
    auto r = early.feed(span_of("HTTP/1.1 200 OK\r\n\r\nSSH-2.0"));
    BOOST_TEST((r.status == proxy_status::failed));
    BOOST_TEST((r.error == corows::error::proxy_protocol_error));
    BOOST_TEST(early.detail() == "the proxy sent 7 bytes after its 200 answer, before the client spoke: "
                                 "they cannot be the server's");
}

BOOST_AUTO_TEST_CASE(socks5_without_credentials_rfc1928_bytes) {
    corows::socks5_handshake h(parsed("socks5h://proxy"), corows::socks5_connect_by_name("example.com", 443));
    BOOST_TEST((to_bytes(h.output()) == bytes{0x05, 0x01, 0x00}));
    BOOST_TEST(h.need() == 2u);
    const bytes sent = run_socks(h, {{0x05, 0x00}, {0x05, 0x00, 0x00, 0x01, 10, 0, 0, 1, 0x1f, 0x90}});
    const bytes expected{0x05, 0x01, 0x00,                                       // greeting: no auth
                         0x05, 0x01, 0x00, 0x03, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm',
                         0x01, 0xbb};                                            // CONNECT example.com:443
    BOOST_TEST(sent == expected);
    BOOST_TEST((h.status() == proxy_status::complete));
    BOOST_TEST(h.need() == 0u);
}

BOOST_AUTO_TEST_CASE(socks5_with_credentials_rfc1929_bytes) {
    const std::array<std::uint8_t, 4> addr{127, 0, 0, 1};
    corows::socks5_handshake h(parsed("socks5://bob:pw@proxy"), corows::socks5_connect_by_address(addr, 8080));
    BOOST_TEST((to_bytes(h.output()) == bytes{0x05, 0x02, 0x00, 0x02}));
    // A name in the bound address: its length byte decides how much more is read.
    const bytes sent = run_socks(h, {{0x05, 0x02}, {0x01, 0x00}, {0x05, 0x00, 0x00, 0x03, 2, 'h', 'i', 0, 80}});
    const bytes expected{0x05, 0x02, 0x00, 0x02,                              // greeting: none, user/password
                         0x01, 3, 'b', 'o', 'b', 2, 'p', 'w',                 // RFC 1929 request
                         0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0x1f, 0x90};  // CONNECT 127.0.0.1:8080
    BOOST_TEST(sent == expected);
    BOOST_TEST((h.status() == proxy_status::complete));
}

BOOST_AUTO_TEST_CASE(socks5_ipv6_connect_and_reply) {
    std::array<std::uint8_t, 16> addr{};
    addr[15] = 1;
    bytes req = corows::socks5_connect_by_address(addr, 1);
    BOOST_TEST(req.size() == 4u + 16u + 2u);
    BOOST_TEST(req[3] == 0x04);
    BOOST_TEST(req[19] == 1);
    BOOST_TEST(req[21] == 1);
    corows::socks5_handshake h(parsed("socks5://proxy"), req);
    bytes reply{0x05, 0x00, 0x00, 0x04};
    reply.resize(4 + 16 + 2);
    run_socks(h, {{0x05, 0x00}, reply});
    BOOST_TEST((h.status() == proxy_status::complete));
    const std::array<std::uint8_t, 3> odd{1, 2, 3};
    BOOST_CHECK_THROW(corows::socks5_connect_by_address(odd, 1), std::invalid_argument);
    BOOST_CHECK_THROW(corows::socks5_connect_by_name(std::string(256, 'a'), 1), std::length_error);
}

BOOST_AUTO_TEST_CASE(socks5_reads_no_byte_past_its_last_reply) {
    corows::socks5_handshake h(parsed("socks5h://proxy"), corows::socks5_connect_by_name("a", 1));
    h.output_sent();
    const bytes method{0x05, 0x00};
    BOOST_TEST(h.feed(method).consumed == 2u);
    h.output_sent();
    const bytes reply_and_more{0x05, 0x00, 0x00, 0x01, 1, 2, 3, 4, 0, 1, 'G', 'E', 'T'};
    auto r = h.feed(reply_and_more);
    BOOST_TEST(r.consumed == 10u);
    BOOST_TEST((r.status == proxy_status::complete));
}

BOOST_AUTO_TEST_CASE(every_socks5_reply_code_has_its_message) {
    const std::array<std::string_view, 8> texts{"general server failure", "connection not allowed by its ruleset",
                                                "network unreachable", "host unreachable",
                                                "connection refused by the target", "TTL expired",
                                                "command not supported", "address type not supported"};
    for (std::uint8_t code = 1; code <= 9; ++code) {
        corows::socks5_handshake h(parsed("socks5h://proxy"), corows::socks5_connect_by_name("a", 1));
        run_socks(h, {{0x05, 0x00}, {0x05, code, 0x00, 0x01}});
        BOOST_TEST((h.status() == proxy_status::failed));
        BOOST_TEST(h.error().category().name() == std::string("corows.socks5"));
        BOOST_TEST(h.error().value() == code);
        const std::string expected =
            code <= 8 ? "SOCKS5 proxy: " + std::string(texts[code - 1]) : "SOCKS5 proxy: unassigned reply code 9";
        BOOST_TEST(h.error().message() == expected);
        BOOST_TEST(h.detail() == "the proxy could not open the connection (SOCKS5 reply " + std::to_string(code) + ")");
    }
    BOOST_TEST((std::error_code(corows::socks5_reply::connection_refused) ==
                corows::make_error_code(corows::socks5_reply::connection_refused)));
}

BOOST_AUTO_TEST_CASE(socks5_authentication_failures) {
    corows::socks5_handshake rejected(parsed("socks5://bob:pw@proxy"), corows::socks5_connect_by_name("a", 1));
    run_socks(rejected, {{0x05, 0x02}, {0x01, 0x01}});
    BOOST_TEST((rejected.error() == corows::error::proxy_auth_failed));
    BOOST_TEST(rejected.detail() == "the SOCKS5 proxy rejected the user name and password");

    corows::socks5_handshake none(parsed("socks5://proxy"), corows::socks5_connect_by_name("a", 1));
    run_socks(none, {{0x05, 0xff}});
    BOOST_TEST((none.error() == corows::error::proxy_auth_failed));
    BOOST_TEST(none.detail() == "the SOCKS5 proxy requires authentication: user:password@ in the proxy URL");

    corows::socks5_handshake unoffered(parsed("socks5://proxy"), corows::socks5_connect_by_name("a", 1));
    run_socks(unoffered, {{0x05, 0x02}});
    BOOST_TEST((unoffered.error() == corows::error::proxy_protocol_error));
}

BOOST_AUTO_TEST_CASE(socks5_garbage_is_a_protocol_error) {
    corows::socks5_handshake http(parsed("socks5://proxy"), corows::socks5_connect_by_name("a", 1));
    run_socks(http, {{'H', 'T'}});
    BOOST_TEST((http.error() == corows::error::proxy_protocol_error));
    BOOST_TEST(http.detail() == "not a SOCKS5 proxy: its answer starts with 0x48 ('H': an HTTP proxy? use http://)");
    BOOST_TEST(http.need() == 0u);
    BOOST_TEST(http.feed(bytes{1, 2, 3}).consumed == 0u);

    corows::socks5_handshake atyp(parsed("socks5://proxy"), corows::socks5_connect_by_name("a", 1));
    run_socks(atyp, {{0x05, 0x00}, {0x05, 0x00, 0x00, 0x09}});
    BOOST_TEST((atyp.error() == corows::error::proxy_protocol_error));
    BOOST_TEST(atyp.detail() == "malformed SOCKS5 CONNECT reply (address type 0x09)");

    corows::socks5_handshake auth(parsed("socks5://u:p@proxy"), corows::socks5_connect_by_name("a", 1));
    run_socks(auth, {{0x05, 0x02}, {0x05, 0x00}});
    BOOST_TEST((auth.error() == corows::error::proxy_protocol_error));
}

BOOST_AUTO_TEST_CASE(environment_picks_the_variable_curl_would) {
    const auto wss = target("wss://example.com/");
    const auto ws = target("ws://example.com/");
    BOOST_TEST(corows::proxy_from_environment(wss, env_of({})).url.empty());
    auto c = corows::proxy_from_environment(wss, env_of({{"https_proxy", "http://a:1"}, {"HTTPS_PROXY", "http://b:1"},
                                                          {"all_proxy", "http://c:1"}}));
    BOOST_TEST(c.url == "http://a:1");
    BOOST_TEST(c.variable == "https_proxy");
    c = corows::proxy_from_environment(wss, env_of({{"HTTPS_PROXY", "http://b:1"}, {"http_proxy", "http://h:1"}}));
    BOOST_TEST(c.url == "http://b:1");
    // ws:// reads http_proxy in lower case only (CGI's HTTP_PROXY comes from a request field).
    c = corows::proxy_from_environment(ws, env_of({{"http_proxy", "http://h:1"}, {"https_proxy", "http://a:1"}}));
    BOOST_TEST(c.url == "http://h:1");
    c = corows::proxy_from_environment(ws, env_of({{"HTTP_PROXY", "http://evil:1"}}));
    BOOST_TEST(c.url.empty());
    c = corows::proxy_from_environment(ws, env_of({{"HTTP_PROXY", "http://evil:1"}, {"ALL_PROXY", "socks5h://s:1"}}));
    BOOST_TEST(c.url == "socks5h://s:1");
    BOOST_TEST(c.variable == "ALL_PROXY");
    c = corows::proxy_from_environment(ws, env_of({{"all_proxy", "socks5://l:1"}, {"ALL_PROXY", "socks5h://s:1"}}));
    BOOST_TEST(c.url == "socks5://l:1");
    // An empty value counts as unset.
    c = corows::proxy_from_environment(wss, env_of({{"https_proxy", ""}, {"all_proxy", "http://c:1"}}));
    BOOST_TEST(c.url == "http://c:1");
}

BOOST_AUTO_TEST_CASE(no_proxy_in_the_environment_says_no) {
    const auto wss = target("wss://api.example.com/");
    auto c = corows::proxy_from_environment(wss, env_of({{"https_proxy", "http://a:1"}, {"no_proxy", "example.com"}}));
    BOOST_TEST(c.url.empty());
    BOOST_TEST(c.variable == "no_proxy");
    c = corows::proxy_from_environment(wss, env_of({{"https_proxy", "http://a:1"}, {"NO_PROXY", "example.com"}}));
    BOOST_TEST(c.url.empty());
    BOOST_TEST(c.variable == "NO_PROXY");
    // no_proxy is read first; NO_PROXY is not consulted when it is set.
    c = corows::proxy_from_environment(wss, env_of({{"https_proxy", "http://a:1"}, {"no_proxy", "other.org"},
                                                     {"NO_PROXY", "example.com"}}));
    BOOST_TEST(c.url == "http://a:1");
}

BOOST_AUTO_TEST_CASE(no_proxy_rules) {
    using corows::no_proxy_matches;
    // "*" alone means every host; inside a list it is no wildcard (as curl).
    BOOST_TEST(no_proxy_matches("*", "example.com"));
    BOOST_TEST(no_proxy_matches(" * ", "10.0.0.1"));
    BOOST_TEST(!no_proxy_matches("*,other.org", "example.com"));
    // A name matches itself and its subdomains, with or without a leading dot.
    BOOST_TEST(no_proxy_matches("example.com", "example.com"));
    BOOST_TEST(no_proxy_matches("example.com", "api.example.com"));
    BOOST_TEST(no_proxy_matches(".example.com", "api.example.com"));
    BOOST_TEST(no_proxy_matches(".example.com", "example.com"));
    BOOST_TEST(!no_proxy_matches("example.com", "badexample.com"));
    BOOST_TEST(!no_proxy_matches("api.example.com", "example.com"));
    // Lists: commas, whitespace trimmed, empty entries skipped, case-insensitive.
    BOOST_TEST(no_proxy_matches("localhost, \tEXAMPLE.com ,,", "Api.Example.COM"));
    BOOST_TEST(no_proxy_matches("a.org,b.org", "x.b.org"));
    BOOST_TEST(!no_proxy_matches("a.org,b.org", "c.org"));
    BOOST_TEST(!no_proxy_matches("", "example.com"));
    BOOST_TEST(!no_proxy_matches(" , ", "example.com"));
    BOOST_TEST(no_proxy_matches("example.com.", "example.com"));
    // IP literals match exactly, bracketed or not; never as a suffix.
    BOOST_TEST(no_proxy_matches("127.0.0.1", "127.0.0.1"));
    BOOST_TEST(!no_proxy_matches("0.0.1", "127.0.0.1"));
    BOOST_TEST(!no_proxy_matches("127.0.0.1", "127.0.0.10"));
    BOOST_TEST(no_proxy_matches("::1", "::1"));
    BOOST_TEST(no_proxy_matches("[::1]", "::1"));
    BOOST_TEST(no_proxy_matches("[FE80::1]", "fe80::1"));
    BOOST_TEST(!no_proxy_matches("::2", "::1"));
    BOOST_TEST(!no_proxy_matches("localhost", "127.0.0.1")); // no resolution
}

BOOST_AUTO_TEST_SUITE_END()
