// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/url.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>
#include <system_error>

namespace {

using corows::url;
using corows::url_error;

url parsed(std::string_view text) {
    std::error_code ec;
    url u = corows::parse_url(text, ec);
    BOOST_TEST(!ec, text << ": " << ec.message());
    return u;
}

url make(bool secure, std::string host, std::uint16_t port, std::string target) {
    url u;
    u.secure = secure;
    u.host = std::move(host);
    u.port = port;
    u.target = std::move(target);
    return u;
}

std::error_code error_of(std::string_view text) {
    std::error_code ec;
    url u = corows::parse_url(text, ec);
    BOOST_TEST((u == url{}), text << ": a failed parse returns an empty url");
    return ec;
}

} // namespace

BOOST_AUTO_TEST_SUITE(url)

BOOST_AUTO_TEST_CASE(scheme_host_port_and_target) {
    BOOST_TEST((parsed("ws://example.com") == make(false, "example.com", 80, "/")));
    BOOST_TEST((parsed("wss://example.com") == make(true, "example.com", 443, "/")));
    BOOST_TEST((parsed("ws://example.com/") == make(false, "example.com", 80, "/")));
    BOOST_TEST((parsed("ws://example.com:8080/chat") == make(false, "example.com", 8080, "/chat")));
    BOOST_TEST((parsed("wss://api.example.com/v1/stream?token=abc&x=1") ==
                make(true, "api.example.com", 443, "/v1/stream?token=abc&x=1")));
    BOOST_TEST((parsed("ws://h?q=1") == make(false, "h", 80, "/?q=1")));
    BOOST_TEST((parsed("ws://127.0.0.1:9001/") == make(false, "127.0.0.1", 9001, "/")));
    BOOST_TEST((parsed("ws://localhost:65535") == make(false, "localhost", 65535, "/")));
    BOOST_TEST((parsed("ws://a_b-c.d:1") == make(false, "a_b-c.d", 1, "/")));
}

BOOST_AUTO_TEST_CASE(scheme_and_host_are_case_insensitive) {
    BOOST_TEST((parsed("WSS://Example.COM/Path") == make(true, "example.com", 443, "/Path")));
    BOOST_TEST((parsed("Ws://HOST") == make(false, "host", 80, "/")));
}

BOOST_AUTO_TEST_CASE(ipv6_literals) {
    BOOST_TEST((parsed("ws://[::1]:9001/x") == make(false, "::1", 9001, "/x")));
    BOOST_TEST((parsed("wss://[2001:DB8::7]") == make(true, "2001:db8::7", 443, "/")));
    BOOST_TEST((parsed("ws://[::ffff:192.0.2.1]/") == make(false, "::ffff:192.0.2.1", 80, "/")));
    BOOST_TEST((parsed("ws://[1:2:3:4:5:6:7:8]") == make(false, "1:2:3:4:5:6:7:8", 80, "/")));
    BOOST_TEST((parsed("ws://[::]") == make(false, "::", 80, "/")));
}

BOOST_AUTO_TEST_CASE(empty_port_means_default_and_explicit_default_is_kept_out_of_host) {
    BOOST_TEST((parsed("ws://h:/p") == make(false, "h", 80, "/p")));
    BOOST_TEST((parsed("ws://h:80/p") == make(false, "h", 80, "/p")));
    BOOST_TEST((parsed("wss://h:0443") == make(true, "h", 443, "/")));
}

BOOST_AUTO_TEST_CASE(host_field_carries_port_only_when_not_default) {
    BOOST_TEST(parsed("ws://example.com").host_field() == "example.com");
    BOOST_TEST(parsed("ws://example.com:80").host_field() == "example.com");
    BOOST_TEST(parsed("ws://example.com:443").host_field() == "example.com:443");
    BOOST_TEST(parsed("wss://example.com:443").host_field() == "example.com");
    BOOST_TEST(parsed("wss://example.com:80").host_field() == "example.com:80");
    BOOST_TEST(parsed("wss://[::1]:8443/").host_field() == "[::1]:8443");
    BOOST_TEST(parsed("ws://[::1]/").host_field() == "[::1]");
}

BOOST_AUTO_TEST_CASE(host_is_ip_tells_literals_from_names) {
    BOOST_TEST(parsed("ws://127.0.0.1").host_is_ip());
    BOOST_TEST(parsed("ws://[::1]").host_is_ip());
    BOOST_TEST(!parsed("ws://localhost").host_is_ip());
    BOOST_TEST(!parsed("ws://1.2.3").host_is_ip());
    BOOST_TEST(!parsed("ws://256.1.1.1").host_is_ip());
    BOOST_TEST(!parsed("ws://01.2.3.4").host_is_ip());
}

BOOST_AUTO_TEST_CASE(to_string_is_canonical) {
    BOOST_TEST(parsed("WSS://Example.com:443/a?b").to_string() == "wss://example.com/a?b");
    BOOST_TEST(parsed("ws://[::1]:81").to_string() == "ws://[::1]:81/");
    BOOST_TEST(parsed("ws://h?x").to_string() == "ws://h/?x");
}

BOOST_AUTO_TEST_CASE(unsafe_target_bytes_are_percent_encoded) {
    BOOST_TEST(parsed("ws://h/a b").target == "/a%20b");
    BOOST_TEST(parsed("ws://h/q?x={\"a\"|b}").target == "/q?x=%7B%22a%22%7Cb%7D");
    BOOST_TEST(parsed("ws://h/caf\xC3\xA9").target == "/caf%C3%A9");
    BOOST_TEST(parsed("ws://h/already%20encoded").target == "/already%20encoded");
    BOOST_TEST(parsed("ws://h/<>\\^`").target == "/%3C%3E%5C%5E%60");
    BOOST_TEST(parsed("ws://h/user@x").target == "/user@x");
}

BOOST_AUTO_TEST_CASE(bad_scheme) {
    BOOST_TEST((error_of("http://example.com") == url_error::bad_scheme));
    BOOST_TEST((error_of("https://example.com") == url_error::bad_scheme));
    BOOST_TEST((error_of("example.com") == url_error::bad_scheme));
    BOOST_TEST((error_of("ws:/example.com") == url_error::bad_scheme));
    BOOST_TEST((error_of("") == url_error::bad_scheme));
    BOOST_TEST((error_of(" ws://h") == url_error::bad_scheme));
}

BOOST_AUTO_TEST_CASE(bad_host) {
    BOOST_TEST((error_of("ws://") == url_error::bad_host));
    BOOST_TEST((error_of("ws:///path") == url_error::bad_host));
    BOOST_TEST((error_of("ws://:80/") == url_error::bad_host));
    BOOST_TEST((error_of("ws://exa mple.com") == url_error::bad_host));
    BOOST_TEST((error_of("ws://h\\x") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[::1") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[::1]x") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[1:2:3:4:5:6:7:8:9]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[1::2::3]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[12345::]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[fe80::1%25eth0]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[v1.x]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://[127.0.0.1]") == url_error::bad_host));
    BOOST_TEST((error_of("ws://::1/") == url_error::bad_host));
    BOOST_TEST((error_of("ws://caf\xC3\xA9.example") == url_error::bad_host));
    BOOST_TEST((error_of("ws://" + std::string(254, 'a')) == url_error::bad_host));
}

BOOST_AUTO_TEST_CASE(bad_port) {
    BOOST_TEST((error_of("ws://h:0") == url_error::bad_port));
    BOOST_TEST((error_of("ws://h:65536") == url_error::bad_port));
    BOOST_TEST((error_of("ws://h:99999999999999999999") == url_error::bad_port));
    BOOST_TEST((error_of("ws://h:8o") == url_error::bad_port));
    BOOST_TEST((error_of("ws://h:-1") == url_error::bad_port));
    BOOST_TEST((error_of("ws://h:80:80") == url_error::bad_port));
    BOOST_TEST((error_of("ws://[::1]:x") == url_error::bad_port));
}

BOOST_AUTO_TEST_CASE(userinfo_fragment_and_control_bytes) {
    BOOST_TEST((error_of("ws://user:pw@h/") == url_error::userinfo));
    BOOST_TEST((error_of("ws://@h/") == url_error::userinfo));
    BOOST_TEST((error_of("ws://h/#frag") == url_error::fragment));
    BOOST_TEST((error_of("ws://h#") == url_error::fragment));
    BOOST_TEST((error_of("ws://h/a\r\nHost: evil") == url_error::bad_target));
    BOOST_TEST((error_of("ws://h/a\tb") == url_error::bad_target));
    BOOST_TEST((error_of(std::string_view("ws://h/a\0b", 10)) == url_error::bad_target));
    BOOST_TEST((error_of("ws://h/\x7f") == url_error::bad_target));
}

BOOST_AUTO_TEST_CASE(errors_have_a_category_and_the_throwing_form_throws) {
    std::error_code ec = corows::make_error_code(url_error::bad_port);
    BOOST_TEST(std::string(ec.category().name()) == "corows.url");
    BOOST_TEST(!ec.message().empty());
    BOOST_TEST(ec.message() != corows::make_error_code(url_error::bad_host).message());
    BOOST_CHECK_THROW(corows::parse_url("http://x"), std::system_error);
    try {
        corows::parse_url("ws://h/?secret=1#f");
        BOOST_ERROR("no exception");
    } catch (const std::system_error& e) {
        BOOST_TEST((e.code() == url_error::fragment));
        BOOST_TEST(std::string(e.what()).find("secret") == std::string::npos);
    }
    BOOST_TEST((corows::parse_url("wss://x/y") == make(true, "x", 443, "/y")));
    std::error_code stale = corows::make_error_code(url_error::bad_host);
    corows::parse_url("ws://ok", stale);
    BOOST_TEST(!stale);
}

// ws+unix: URLs, in the form of Node's ws library.
corows::unix_url unix_ok(std::string_view text) {
    std::error_code ec;
    auto u = corows::parse_unix_url(text, ec);
    BOOST_TEST(!ec, text << ": " << ec.message());
    return u;
}

std::error_code unix_error_of(std::string_view text) {
    std::error_code ec;
    auto u = corows::parse_unix_url(text, ec);
    BOOST_TEST((u == corows::unix_url{}), text << ": a failed parse returns an empty unix_url");
    return ec;
}

BOOST_AUTO_TEST_CASE(unix_urls_name_a_socket_path_and_a_target) {
    using corows::unix_url;
    BOOST_TEST((unix_ok("ws+unix:///tmp/app.sock:/chat?room=1") == unix_url{"/tmp/app.sock", "/chat?room=1"}));
    BOOST_TEST((unix_ok("ws+unix:/tmp/app.sock:/chat") == unix_url{"/tmp/app.sock", "/chat"}));
    BOOST_TEST((unix_ok("WS+UNIX:///run/x") == unix_url{"/run/x", "/"}));
    BOOST_TEST((unix_ok("ws+unix:///run/x:") == unix_url{"/run/x", "/"}));
    BOOST_TEST((unix_ok("ws+unix:///run/x:?q=1") == unix_url{"/run/x", "/?q=1"}));
    BOOST_TEST((unix_ok("ws+unix:relative.sock:/a b") == unix_url{"relative.sock", "/a%20b"}));
    const std::string longest = "/" + std::string(106, 'p');
    BOOST_TEST((unix_ok("ws+unix://" + longest) == unix_url{longest, "/"}));
}

BOOST_AUTO_TEST_CASE(bad_unix_urls) {
    BOOST_TEST((unix_error_of("ws://h/") == url_error::bad_scheme));
    BOOST_TEST((unix_error_of("wss+unix:///tmp/s") == url_error::bad_scheme));
    BOOST_TEST((unix_error_of("ws+unix") == url_error::bad_scheme));
    BOOST_TEST((unix_error_of("ws+unix:") == url_error::bad_socket_path));
    BOOST_TEST((unix_error_of("ws+unix://") == url_error::bad_socket_path));
    BOOST_TEST((unix_error_of("ws+unix://host/tmp/s") == url_error::bad_socket_path));
    BOOST_TEST((unix_error_of("ws+unix://:/x") == url_error::bad_socket_path));
    BOOST_TEST((unix_error_of("ws+unix:///" + std::string(107, 'p')) == url_error::bad_socket_path));
    BOOST_TEST((unix_error_of(std::string_view("ws+unix:///a\0b", 14)) == url_error::bad_socket_path));
    BOOST_TEST((unix_error_of("ws+unix:///tmp/s:x") == url_error::bad_target));
    BOOST_TEST((unix_error_of("ws+unix:///tmp/s:/a\r\nHost: evil") == url_error::bad_target));
    BOOST_TEST((unix_error_of("ws+unix:///tmp/s:/#f") == url_error::fragment));
    BOOST_TEST(corows::make_error_code(url_error::bad_socket_path).message().find("socket path") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
