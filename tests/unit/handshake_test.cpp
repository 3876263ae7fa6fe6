// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/handshake.hpp>

#include <corows/detail/base64.hpp>

#include <boost/test/unit_test.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using corows::error;
using corows::http_parse_status;

// RFC 6455 §1.2.
const std::string rfc_request =
    "GET /chat HTTP/1.1\r\n"
    "Host: server.example.com\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Origin: http://example.com\r\n"
    "Sec-WebSocket-Protocol: chat, superchat\r\n"
    "Sec-WebSocket-Version: 13\r\n"
    "\r\n";

// What Chromium 120 sends for `new WebSocket("ws://localhost:8080/chat")` from a page served
// by localhost:8080, in its order.
const std::string chromium_request =
    "GET /chat HTTP/1.1\r\n"
    "Host: localhost:8080\r\n"
    "Connection: Upgrade\r\n"
    "Pragma: no-cache\r\n"
    "Cache-Control: no-cache\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36\r\n"
    "Upgrade: websocket\r\n"
    "Origin: http://localhost:8080\r\n"
    "Sec-WebSocket-Version: 13\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Accept-Language: en-US,en;q=0.9\r\n"
    "Sec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\n"
    "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
    "\r\n";

// What Firefox 121 sends for `new WebSocket("ws://localhost:8080/chat?room=1", ["v2.chat"])`.
const std::string firefox_request =
    "GET /chat?room=1 HTTP/1.1\r\n"
    "Host: localhost:8080\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0\r\n"
    "Accept: */*\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Sec-WebSocket-Version: 13\r\n"
    "Origin: http://localhost:8080\r\n"
    "Sec-WebSocket-Protocol: v2.chat\r\n"
    "Sec-WebSocket-Extensions: permessage-deflate\r\n"
    "Sec-WebSocket-Key: Z0Fzc2tMSWxjZDJoNzV6Ng==\r\n"
    "Connection: keep-alive, Upgrade\r\n"
    "Sec-Fetch-Dest: websocket\r\n"
    "Sec-Fetch-Mode: websocket\r\n"
    "Sec-Fetch-Site: same-origin\r\n"
    "Pragma: no-cache\r\n"
    "Cache-Control: no-cache\r\n"
    "Upgrade: websocket\r\n"
    "\r\n";

corows::http_request parse_request(std::string_view text) {
    corows::http_request_parser p;
    const auto r = p.feed(text);
    BOOST_TEST_REQUIRE((r.status == http_parse_status::complete), text);
    BOOST_TEST_REQUIRE(r.consumed == text.size());
    return p.release();
}

corows::http_response parse_response(std::string_view text) {
    corows::http_response_parser p;
    const auto r = p.feed(text);
    BOOST_TEST_REQUIRE((r.status == http_parse_status::complete), text);
    return p.release();
}

// Replaces the whole line starting with `prefix` (up to its CRLF) by `line`, which may be
// empty to drop it; `line` carries its own CRLF.
std::string replace_line(std::string text, std::string_view prefix, std::string_view line) {
    const auto at = text.find(prefix);
    BOOST_TEST_REQUIRE(at != std::string::npos, prefix);
    const auto end = text.find("\r\n", at) + 2;
    text.replace(at, end - at, line);
    return text;
}

std::error_code validate(std::string_view text) {
    corows::upgrade_request out;
    return corows::validate_upgrade_request(parse_request(text), out);
}

// The 101 answer to the RFC's example key, ready for client-side mutation.
const std::string good_response =
    "HTTP/1.1 101 Switching Protocols\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
    "\r\n";

const std::vector<std::string> offered_protocols = {"chat", "superchat"};

corows::upgrade_offer rfc_offer() {
    corows::upgrade_offer offer;
    offer.host = "server.example.com";
    offer.target = "/chat";
    offer.key = "dGhlIHNhbXBsZSBub25jZQ==";
    offer.subprotocols = offered_protocols;
    offer.origin = "http://example.com";
    return offer;
}

std::error_code client_validate(std::string_view response, const corows::upgrade_offer& offer) {
    corows::upgrade_response out;
    return corows::validate_upgrade_response(parse_response(response), offer, out);
}

} // namespace

BOOST_AUTO_TEST_SUITE(handshake)

BOOST_AUTO_TEST_CASE(accept_key_of_the_rfc_example) {
    // RFC 6455 §1.3 and §4.2.2.
    BOOST_TEST(corows::accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    BOOST_TEST(corows::accept_key("x3JJHMbDL1EzLkh9GBhXDw==") == "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
    BOOST_TEST(corows::websocket_guid == "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
}

BOOST_AUTO_TEST_CASE(rfc_example_request_validates_and_gets_the_rfc_response) {
    corows::upgrade_request up;
    const auto ec = corows::validate_upgrade_request(parse_request(rfc_request), up);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(up.host == "server.example.com");
    BOOST_TEST((up.origin == std::optional<std::string>("http://example.com")));
    BOOST_TEST(up.key == "dGhlIHNhbXBsZSBub25jZQ==");
    BOOST_TEST(up.subprotocols == (std::vector<std::string>{"chat", "superchat"}),
               boost::test_tools::per_element());
    BOOST_TEST(up.extensions.empty());
    BOOST_TEST(up.request.path() == "/chat");

    corows::accept_options options;
    options.subprotocol = "chat";
    // RFC 6455 §1.2's response, byte for byte.
    BOOST_TEST(corows::build_accept_response(up, options) ==
               "HTTP/1.1 101 Switching Protocols\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
               "Sec-WebSocket-Protocol: chat\r\n"
               "\r\n");
    BOOST_TEST(corows::build_accept_response(up) == good_response);
}

BOOST_AUTO_TEST_CASE(chromium_request_validates) {
    BOOST_TEST(corows::is_upgrade(parse_request(chromium_request)));
    corows::upgrade_request up;
    const auto ec = corows::validate_upgrade_request(parse_request(chromium_request), up);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(up.host == "localhost:8080");
    BOOST_TEST((up.origin == std::optional<std::string>("http://localhost:8080")));
    BOOST_TEST(up.key == "x3JJHMbDL1EzLkh9GBhXDw==");
    BOOST_TEST(up.subprotocols.empty());
    BOOST_TEST_REQUIRE(up.extensions.size() == 1u);
    BOOST_TEST(up.extensions[0].name == "permessage-deflate");
    BOOST_TEST_REQUIRE(up.extensions[0].params.size() == 1u);
    BOOST_TEST(up.extensions[0].params[0].name == "client_max_window_bits");
    BOOST_TEST(!up.extensions[0].params[0].value);
    BOOST_TEST(*up.request.find("user-agent") ==
               "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/120.0.0.0 Safari/537.36");

    corows::accept_options options;
    options.extensions = "permessage-deflate; client_max_window_bits=15";
    const auto response = corows::build_accept_response(up, options);
    BOOST_TEST(response ==
               "HTTP/1.1 101 Switching Protocols\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               "Sec-WebSocket-Accept: HSmrc0sMlYUkAGmm5OPpG2HaGWk=\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=15\r\n"
               "\r\n");
}

BOOST_AUTO_TEST_CASE(firefox_request_validates) {
    corows::upgrade_request up;
    const auto ec = corows::validate_upgrade_request(parse_request(firefox_request), up);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(up.request.path() == "/chat");
    BOOST_TEST(up.request.query() == "room=1");
    BOOST_TEST(up.subprotocols == (std::vector<std::string>{"v2.chat"}),
               boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(up.extensions.size() == 1u);
    BOOST_TEST(up.extensions[0].name == "permessage-deflate");
    BOOST_TEST(up.extensions[0].params.empty());
    BOOST_TEST(*up.request.find("Sec-Fetch-Mode") == "websocket");

    corows::accept_options options;
    options.subprotocol = "v2.chat";
    options.extensions = "permessage-deflate";
    const corows::http_field extra[] = {{"Server", "corows"}, {"Set-Cookie", "id=1; HttpOnly"}};
    options.extra_fields = extra;
    BOOST_TEST(corows::build_accept_response(up, options) ==
               "HTTP/1.1 101 Switching Protocols\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               "Sec-WebSocket-Accept: STUrThBSnYCwSmrglxW61PikwFE=\r\n"
               "Sec-WebSocket-Protocol: v2.chat\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate\r\n"
               "Server: corows\r\n"
               "Set-Cookie: id=1; HttpOnly\r\n"
               "\r\n");
}

BOOST_AUTO_TEST_CASE(browser_requests_parse_the_same_at_every_split_point) {
    for (const auto* text : {&chromium_request, &firefox_request}) {
        const auto packet = *text + "\x81\x83\x01\x02\x03\x04" "abc";
        for (std::size_t split = 0; split <= packet.size(); ++split) {
            corows::http_request_parser p;
            auto r = p.feed(std::string_view(packet).substr(0, split));
            std::size_t consumed = r.consumed;
            if (r.status == http_parse_status::need_more)
                consumed += p.feed(std::string_view(packet).substr(split)).consumed;
            BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete));
            BOOST_TEST(consumed == text->size());
            corows::upgrade_request up;
            BOOST_TEST(!corows::validate_upgrade_request(p.get(), up));
            BOOST_TEST(up.request.to_string() == *text);
        }
    }
}

BOOST_AUTO_TEST_CASE(tokens_and_names_are_case_insensitive) {
    auto text = replace_line(rfc_request, "Upgrade:", "upgrade: WebSocket\r\n");
    text = replace_line(text, "Connection:", "CONNECTION: keep-alive,  UPGRADE \r\n");
    text = replace_line(text, "Sec-WebSocket-Key:", "sec-websocket-key:   dGhlIHNhbXBsZSBub25jZQ==\t\r\n");
    text = replace_line(text, "Host:", "HOST: server.example.com\r\n");
    BOOST_TEST(!validate(text));

    // Several Connection lines form one list.
    text = replace_line(rfc_request, "Connection:", "Connection: keep-alive\r\nConnection: Upgrade\r\n");
    BOOST_TEST(!validate(text));
}

BOOST_AUTO_TEST_CASE(repeated_and_folded_offers) {
    auto text = replace_line(rfc_request, "Sec-WebSocket-Protocol:",
                             "Sec-WebSocket-Protocol: chat\r\n"
                             "Sec-WebSocket-Extensions: permessage-deflate;\r\n"
                             " client_max_window_bits, x-webkit-deflate-frame\r\n"
                             "sec-websocket-protocol: superchat,, v3\r\n"
                             "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=10\r\n");
    corows::upgrade_request up;
    const auto ec = corows::validate_upgrade_request(parse_request(text), up);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(up.subprotocols == (std::vector<std::string>{"chat", "superchat", "v3"}),
               boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(up.extensions.size() == 3u);
    BOOST_TEST(up.extensions[0].name == "permessage-deflate");
    BOOST_TEST_REQUIRE(up.extensions[0].params.size() == 1u);
    BOOST_TEST(up.extensions[0].params[0].name == "client_max_window_bits");
    BOOST_TEST(up.extensions[1].name == "x-webkit-deflate-frame");
    BOOST_TEST_REQUIRE(up.extensions[2].params.size() == 1u);
    BOOST_TEST(*up.extensions[2].params[0].value == "10");

    corows::accept_options options;
    options.subprotocol = "v3";
    BOOST_TEST(corows::build_accept_response(up, options).find("Sec-WebSocket-Protocol: v3\r\n") !=
               std::string::npos);
    options.subprotocol = "Chat"; // subprotocol names are case-sensitive
    BOOST_CHECK_THROW(corows::build_accept_response(up, options), std::invalid_argument);
    options.subprotocol = "mqtt";
    BOOST_CHECK_THROW(corows::build_accept_response(up, options), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(every_bad_request_gets_its_error_and_status) {
    struct row {
        std::string text;
        error expected;
        unsigned status;
    };
    const auto& r = rfc_request;
    const row rows[] = {
        {replace_line(r, "GET", "POST /chat HTTP/1.1\r\n"), error::bad_method, 405},
        {replace_line(r, "GET", "get /chat HTTP/1.1\r\n"), error::bad_method, 405},
        {replace_line(r, "GET", "GET /chat HTTP/1.0\r\n"), error::bad_http_version, 400},
        {replace_line(r, "GET", "GET /chat HTTP/0.9\r\n"), error::bad_http_version, 400},
        {replace_line(r, "GET", "GET /chat HTTP/2.0\r\n"), error::http_version_not_supported, 505},
        {replace_line(r, "GET", "GET /chat HTTP/9.9\r\n"), error::http_version_not_supported, 505},
        {replace_line(r, "GET", "GET /chat HTTP/1.2\r\n"), error::http_version_not_supported, 505},
        {replace_line(r, "GET", "GET /chat HTTP/3.0\r\n"), error::http_version_not_supported, 505},
        {replace_line(r, "Host:", "Host: server.example.com\r\nContent-Length: 5\r\n"),
         error::upgrade_with_body, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nTransfer-Encoding: chunked\r\n"),
         error::upgrade_with_body, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nTransfer-Encoding: identity\r\n"),
         error::upgrade_with_body, 400},
        {replace_line(r, "Host:",
                      "Host: server.example.com\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n"),
         error::conflicting_length, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nContent-Length: -1\r\n"),
         error::bad_content_length, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nContent-Length: 0x10\r\n"),
         error::bad_content_length, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nContent-Length:\r\n"),
         error::bad_content_length, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nContent-Length: 0\r\nContent-Length: 3\r\n"),
         error::bad_content_length, 400},
        {replace_line(r, "Host:", "Host: server.example.com\r\nContent-Length: 99999999999999999999999\r\n"),
         error::bad_content_length, 400},
        {replace_line(r, "Host:", ""), error::missing_host, 400},
        {replace_line(r, "Host:", "Host: a\r\nHost: b\r\n"), error::missing_host, 400},
        {replace_line(r, "Upgrade:", ""), error::bad_upgrade, 400},
        {replace_line(r, "Upgrade:", "Upgrade: h2c\r\n"), error::bad_upgrade, 400},
        {replace_line(r, "Upgrade:", "Upgrade: websocket2\r\n"), error::bad_upgrade, 400},
        {replace_line(r, "Connection:", ""), error::bad_connection, 400},
        {replace_line(r, "Connection:", "Connection: keep-alive\r\n"), error::bad_connection, 400},
        {replace_line(r, "Connection:", "Connection: upgrade-insecure\r\n"), error::bad_connection, 400},
        {replace_line(r, "Sec-WebSocket-Key:", ""), error::bad_key, 400},
        // base64 of 15 and 17 bytes
        {replace_line(r, "Sec-WebSocket-Key:", "Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2Rl\r\n"), error::bad_key, 400},
        {replace_line(r, "Sec-WebSocket-Key:", "Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZmc=\r\n"), error::bad_key, 400},
        {replace_line(r, "Sec-WebSocket-Key:", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ\r\n"), error::bad_key, 400},
        {replace_line(r, "Sec-WebSocket-Key:", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ*=\r\n"), error::bad_key, 400},
        {replace_line(r, "Sec-WebSocket-Key:", "Sec-WebSocket-Key: \r\n"), error::bad_key, 400},
        {replace_line(r, "Sec-WebSocket-Key:",
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"),
         error::bad_key, 400},
        {replace_line(r, "Sec-WebSocket-Version:", "Sec-WebSocket-Version: 8\r\n"), error::bad_version, 426},
        {replace_line(r, "Sec-WebSocket-Version:", ""), error::bad_version, 426},
        {replace_line(r, "Sec-WebSocket-Version:", "Sec-WebSocket-Version: 13, 8\r\n"), error::bad_version, 426},
        {replace_line(r, "Sec-WebSocket-Version:", "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 13\r\n"),
         error::bad_version, 426},
        {replace_line(r, "Sec-WebSocket-Protocol:", "Sec-WebSocket-Protocol: chat, sup/er\r\n"),
         error::http_parse_error, 400},
        {replace_line(r, "Sec-WebSocket-Protocol:", "Sec-WebSocket-Extensions: permessage-deflate; x=\"\r\n"),
         error::bad_extension, 400},
        {replace_line(r, "Sec-WebSocket-Protocol:", "Sec-WebSocket-Extensions: ;permessage-deflate\r\n"),
         error::bad_extension, 400},
        {replace_line(r, "Sec-WebSocket-Protocol:", "Sec-WebSocket-Extensions: a b\r\n"),
         error::bad_extension, 400},
    };
    for (const auto& row : rows) {
        const auto ec = validate(row.text);
        BOOST_TEST((ec == row.expected), row.text << " gave " << ec.message());
        BOOST_TEST(corows::http_status_for(ec) == row.status, row.text);
    }
}

BOOST_AUTO_TEST_CASE(an_empty_body_is_harmless) {
    // Content-Length: 0 announces no body, so nothing after the head is smuggled.
    const std::string_view lengths[] = {"Content-Length: 0\r\n", "Content-Length: 0\r\nContent-Length: 0\r\n",
                                        "Content-Length: 0, 0\r\n"};
    for (auto cl : lengths) {
        const auto text = replace_line(rfc_request, "Host:", "Host: server.example.com\r\n" + std::string(cl));
        const auto ec = validate(text);
        BOOST_TEST(!ec, cl << " gave " << ec.message());
    }
}

BOOST_AUTO_TEST_CASE(body_statuses) {
    BOOST_TEST(corows::http_status_for(make_error_code(error::body_too_large)) == 413u);
    BOOST_TEST(corows::http_status_for(make_error_code(error::length_required)) == 411u);
    const auto refusal = corows::build_refusal_response(make_error_code(error::http_version_not_supported));
    BOOST_TEST(refusal.rfind("HTTP/1.1 505 HTTP Version Not Supported\r\n", 0) == 0u, refusal);
}

BOOST_AUTO_TEST_CASE(malformed_heads_get_their_status) {
    struct row {
        std::string text;
        error expected;
        unsigned status;
    };
    const row rows[] = {
        {"GET /chat  HTTP/1.1\r\n\r\n", error::http_parse_error, 400},
        {std::string("GET /chat HTTP/1.1\r\nHost: \0\r\n\r\n", 31), error::http_parse_error, 400},
        {"GET /chat HTTP/1.1\r\n" + std::string(9000, 'a'), error::header_too_large, 431},
    };
    for (const auto& row : rows) {
        corows::http_request_parser p;
        const auto r = p.feed(row.text);
        BOOST_TEST((r.status == http_parse_status::failed));
        BOOST_TEST((r.error == row.expected));
        BOOST_TEST(corows::http_status_for(r.error) == row.status);
    }
    std::string many = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 100; ++i) many += "A: b\r\n";
    corows::http_request_parser p;
    const auto r = p.feed(many + "\r\n");
    BOOST_TEST((r.error == error::too_many_headers));
    BOOST_TEST(corows::http_status_for(r.error) == 431u);
}

BOOST_AUTO_TEST_CASE(http_status_for_other_errors) {
    BOOST_TEST(corows::http_status_for(make_error_code(error::timeout)) == 408u);
    BOOST_TEST(corows::http_status_for(make_error_code(error::bad_status)) == 400u);
    BOOST_TEST(corows::http_status_for(std::make_error_code(std::errc::not_enough_memory)) == 500u);
}

BOOST_AUTO_TEST_CASE(is_upgrade_tells_websocket_requests_apart) {
    BOOST_TEST(corows::is_upgrade(parse_request(rfc_request)));
    BOOST_TEST(!corows::is_upgrade(parse_request("GET /index.html HTTP/1.1\r\nHost: h\r\n\r\n")));
    BOOST_TEST(!corows::is_upgrade(parse_request("GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n")));
    BOOST_TEST(corows::is_upgrade(parse_request("POST / HTTP/1.1\r\nUpgrade: foo, WebSocket\r\n\r\n")));
}

BOOST_AUTO_TEST_CASE(validation_failure_leaves_out_untouched) {
    corows::upgrade_request up;
    up.host = "before";
    BOOST_TEST(corows::validate_upgrade_request(
        parse_request(replace_line(rfc_request, "Sec-WebSocket-Key:", "")), up));
    BOOST_TEST(up.host == "before");
    BOOST_TEST(up.request.method.empty());
}

BOOST_AUTO_TEST_CASE(refusal_responses) {
    BOOST_TEST(corows::build_refusal_response(426) ==
               "HTTP/1.1 426 Upgrade Required\r\n"
               "Upgrade: websocket\r\n"
               "Sec-WebSocket-Version: 13\r\n"
               "Content-Length: 0\r\n"
               "Connection: Upgrade, close\r\n"
               "\r\n");
    const corows::http_field extra[] = {{"Server", "corows"}};
    BOOST_TEST(corows::build_refusal_response(403, "origin not allowed", extra) ==
               "HTTP/1.1 403 Forbidden\r\n"
               "Server: corows\r\n"
               "Content-Type: text/plain; charset=utf-8\r\n"
               "Content-Length: 18\r\n"
               "Connection: close\r\n"
               "\r\n"
               "origin not allowed");
    BOOST_TEST(corows::build_refusal_response(make_error_code(error::bad_method)) ==
               "HTTP/1.1 405 Method Not Allowed\r\n"
               "Allow: GET\r\n"
               "Content-Type: text/plain; charset=utf-8\r\n"
               "Content-Length: 33\r\n"
               "Connection: close\r\n"
               "\r\n"
               "upgrade request method is not GET");

    // A client reading the refusal sees the status and the body length.
    const auto text = corows::build_refusal_response(make_error_code(error::bad_version));
    corows::http_response_parser p;
    const auto r = p.feed(text);
    BOOST_TEST_REQUIRE((r.status == http_parse_status::complete));
    BOOST_TEST(p.get().status == 426u);
    BOOST_TEST(*p.get().find("Sec-WebSocket-Version") == "13");
    BOOST_TEST(std::stoul(std::string(*p.get().find("Content-Length"))) == text.size() - r.consumed);
    corows::upgrade_response out;
    BOOST_TEST((corows::validate_upgrade_response(p.get(), rfc_offer(), out) == error::bad_status));

    const corows::http_field injected[] = {{"X", "a\r\nb: c"}};
    BOOST_CHECK_THROW(corows::build_refusal_response(400, "", injected), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(client_request_text_is_exact) {
    auto offer = rfc_offer();
    BOOST_TEST(corows::build_upgrade_request(offer) == rfc_request);

    const std::vector<std::string> none;
    const corows::http_field extra[] = {{"Authorization", "Bearer abc"}, {"User-Agent", "corows"}};
    corows::upgrade_offer plain;
    plain.host = "example.com:8443";
    plain.target = "/live?x=1";
    plain.key = "x3JJHMbDL1EzLkh9GBhXDw==";
    plain.subprotocols = none;
    plain.extensions = "permessage-deflate; client_max_window_bits";
    plain.extra_fields = extra;
    BOOST_TEST(corows::build_upgrade_request(plain) ==
               "GET /live?x=1 HTTP/1.1\r\n"
               "Host: example.com:8443\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               "Sec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
               "Sec-WebSocket-Version: 13\r\n"
               "Authorization: Bearer abc\r\n"
               "User-Agent: corows\r\n"
               "\r\n");
}

BOOST_AUTO_TEST_CASE(client_request_refuses_what_cannot_be_sent) {
    auto offer = rfc_offer();
    offer.target = "/a b";
    BOOST_CHECK_THROW(corows::build_upgrade_request(offer), std::invalid_argument);
    offer.target = "";
    BOOST_CHECK_THROW(corows::build_upgrade_request(offer), std::invalid_argument);
    offer = rfc_offer();
    offer.host = "evil\r\nX: y";
    BOOST_CHECK_THROW(corows::build_upgrade_request(offer), std::invalid_argument);
    offer = rfc_offer();
    const std::vector<std::string> bad = {"chat", "a b"};
    offer.subprotocols = bad;
    BOOST_CHECK_THROW(corows::build_upgrade_request(offer), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(client_accepts_a_good_response) {
    corows::upgrade_response out;
    BOOST_TEST(!corows::validate_upgrade_response(parse_response(good_response), rfc_offer(), out));
    BOOST_TEST(out.subprotocol.empty());
    BOOST_TEST(out.extensions.empty());
    BOOST_TEST(out.response.status == 101u);

    const auto with = replace_line(good_response, "Sec-WebSocket-Accept:",
                                   "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                                   "Sec-WebSocket-Protocol: superchat\r\n"
                                   "Sec-WebSocket-Extensions: permessage-deflate; "
                                   "server_no_context_takeover; client_max_window_bits=\"10\"\r\n");
    BOOST_TEST(!corows::validate_upgrade_response(parse_response(with), rfc_offer(), out));
    BOOST_TEST(out.subprotocol == "superchat");
    BOOST_TEST_REQUIRE(out.extensions.size() == 1u);
    BOOST_TEST(out.extensions[0].name == "permessage-deflate");
    BOOST_TEST_REQUIRE(out.extensions[0].params.size() == 2u);
    BOOST_TEST(out.extensions[0].params[0].name == "server_no_context_takeover");
    BOOST_TEST(out.extensions[0].params[1].name == "client_max_window_bits");
    BOOST_TEST(*out.extensions[0].params[1].value == "10");

    // Tolerated variations: a token list in Connection, case, no reason phrase.
    const auto loose = "HTTP/1.1 101\r\n"
                       "connection: keep-alive, UPGRADE\r\n"
                       "upgrade: WEBSOCKET\r\n"
                       "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                       "\r\n";
    BOOST_TEST(!corows::validate_upgrade_response(parse_response(loose), rfc_offer(), out));
}

BOOST_AUTO_TEST_CASE(client_rejects_each_bad_response) {
    struct row {
        std::string text;
        error expected;
    };
    const auto& g = good_response;
    const row rows[] = {
        {replace_line(g, "HTTP/1.1", "HTTP/1.1 200 OK\r\n"), error::bad_status},
        {replace_line(g, "HTTP/1.1", "HTTP/1.1 400 Bad Request\r\n"), error::bad_status},
        {replace_line(g, "HTTP/1.1", "HTTP/1.0 101 Switching Protocols\r\n"), error::bad_http_version},
        {replace_line(g, "Upgrade:", ""), error::bad_upgrade},
        {replace_line(g, "Upgrade:", "Upgrade: h2c\r\n"), error::bad_upgrade},
        {replace_line(g, "Connection:", ""), error::bad_connection},
        {replace_line(g, "Connection:", "Connection: close\r\n"), error::bad_connection},
        {replace_line(g, "Sec-WebSocket-Accept:", ""), error::bad_accept},
        {replace_line(g, "Sec-WebSocket-Accept:", "Sec-WebSocket-Accept: HSmrc0sMlYUkAGmm5OPpG2HaGWk=\r\n"),
         error::bad_accept},
        {replace_line(g, "Sec-WebSocket-Accept:", "Sec-WebSocket-Accept: s3pplmbitxaq9kyGzzhZRbK+xOo=\r\n"),
         error::bad_accept},
        {replace_line(g, "Sec-WebSocket-Accept:",
                      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
         error::bad_accept},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Protocol: mqtt\r\n\r\n", error::bad_subprotocol},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Protocol: Chat\r\n\r\n", error::bad_subprotocol},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Protocol: chat, superchat\r\n\r\n", error::bad_subprotocol},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Protocol: chat\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
         error::bad_subprotocol},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Protocol:\r\n\r\n", error::bad_subprotocol},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Extensions: permessage-deflate;;\r\n\r\n",
         error::bad_extension},
        {g.substr(0, g.size() - 2) + "Sec-WebSocket-Extensions: permessage-deflate; a=\"b\r\n\r\n",
         error::bad_extension},
    };
    for (const auto& row : rows) {
        const auto ec = client_validate(row.text, rfc_offer());
        BOOST_TEST((ec == row.expected), row.text << " gave " << ec.message());
    }

    // A subprotocol when none was offered.
    auto offer = rfc_offer();
    offer.subprotocols = {};
    const auto chosen = g.substr(0, g.size() - 2) + "Sec-WebSocket-Protocol: chat\r\n\r\n";
    BOOST_TEST((client_validate(chosen, offer) == error::bad_subprotocol));
    // The accept of a different key.
    offer = rfc_offer();
    offer.key = "x3JJHMbDL1EzLkh9GBhXDw==";
    BOOST_TEST((client_validate(g, offer) == error::bad_accept));
}

BOOST_AUTO_TEST_CASE(generated_keys_are_16_random_bytes) {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto key = corows::generate_key();
        BOOST_TEST_REQUIRE(key.size() == 24u);
        const auto bytes = corows::detail::base64_decode(key);
        BOOST_TEST_REQUIRE(bytes.has_value());
        BOOST_TEST(bytes->size() == 16u);
        seen.insert(key);
    }
    BOOST_TEST(seen.size() == 200u);
}

BOOST_AUTO_TEST_CASE(client_and_server_agree_end_to_end) {
    const auto key = corows::generate_key();
    const std::vector<std::string> protocols = {"v1.json", "v2.cbor"};
    corows::upgrade_offer offer;
    offer.host = "127.0.0.1:9001";
    offer.target = "/ws?token=abc";
    offer.key = key;
    offer.subprotocols = protocols;
    offer.extensions = "permessage-deflate; client_max_window_bits";
    offer.origin = "https://app.example";
    const auto request = corows::build_upgrade_request(offer);

    // The server reads the request one byte at a time, with the first client frame behind it.
    const auto inbound = request + "\x81\x80\x00\x00\x00\x00";
    corows::http_request_parser sp;
    std::size_t pos = 0;
    while (sp.status() == http_parse_status::need_more && pos < inbound.size())
        pos += sp.feed(std::string_view(inbound).substr(pos, 1)).consumed;
    BOOST_TEST_REQUIRE((sp.status() == http_parse_status::complete));
    BOOST_TEST(pos == request.size());
    corows::upgrade_request up;
    BOOST_TEST_REQUIRE(!corows::validate_upgrade_request(sp.get(), up));
    BOOST_TEST(up.request.path() == "/ws");
    BOOST_TEST(up.request.query() == "token=abc");
    BOOST_TEST((up.origin == std::optional<std::string>("https://app.example")));
    BOOST_TEST(up.subprotocols == protocols, boost::test_tools::per_element());

    corows::accept_options options;
    options.subprotocol = up.subprotocols[1];
    options.extensions = "permessage-deflate; client_max_window_bits=12";
    const auto response = corows::build_accept_response(up, options);

    corows::http_response_parser cp;
    const auto outbound = response + "\x81\x05hello";
    const auto r = cp.feed(outbound);
    BOOST_TEST_REQUIRE((r.status == http_parse_status::complete));
    BOOST_TEST(r.consumed == response.size());
    corows::upgrade_response res;
    const auto ec = corows::validate_upgrade_response(cp.get(), offer, res);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(res.subprotocol == "v2.cbor");
    BOOST_TEST_REQUIRE(res.extensions.size() == 1u);
    BOOST_TEST(*res.extensions[0].params[0].value == "12");
}

// The subprotocol a server picks from what a request's Sec-WebSocket-Protocol fields offer.
std::string chosen(const std::vector<std::string>& ours, std::string_view offer_lines) {
    auto text = replace_line(rfc_request, "Sec-WebSocket-Protocol:", std::string(offer_lines));
    corows::upgrade_request up;
    const auto ec = corows::validate_upgrade_request(parse_request(text), up);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    return corows::choose_subprotocol(ours, up.subprotocols);
}

BOOST_AUTO_TEST_CASE(the_server_picks_its_most_preferred_offered_subprotocol) {
    const std::string offer = "Sec-WebSocket-Protocol: chat, superchat\r\n";
    // Our order decides, not the client's.
    BOOST_TEST(chosen({"superchat", "chat"}, offer) == "superchat");
    BOOST_TEST(chosen({"chat", "superchat"}, offer) == "chat");
    BOOST_TEST(chosen({"v9", "superchat"}, offer) == "superchat");
    // Nothing shared, nothing offered, nothing supported: none.
    BOOST_TEST(chosen({"v9"}, offer) == "");
    BOOST_TEST(chosen({"chat"}, "") == "");
    BOOST_TEST(chosen({}, offer) == "");
    // Names are case-sensitive tokens (RFC 6455 §4.1).
    BOOST_TEST(chosen({"Chat"}, offer) == "");
}

BOOST_AUTO_TEST_CASE(subprotocol_offers_are_a_list_across_fields) {
    // Whitespace, empty elements and repeated fields: one list, in order.
    BOOST_TEST(chosen({"b"}, "Sec-WebSocket-Protocol:  a ,\t b\t,,\r\n") == "b");
    BOOST_TEST(chosen({"c", "b"}, "Sec-WebSocket-Protocol: a\r\nsec-websocket-protocol: ,c\r\n") == "c");
    BOOST_TEST(chosen({"a"}, "Sec-WebSocket-Protocol: ,\r\n") == "");
    // A space inside an element is not a token: the request is refused.
    auto text = replace_line(rfc_request, "Sec-WebSocket-Protocol:", "Sec-WebSocket-Protocol: a b\r\n");
    BOOST_TEST(validate(text) == error::http_parse_error);
}

BOOST_AUTO_TEST_CASE(a_tls_record_where_a_head_was_expected) {
    auto tls = [](std::vector<std::uint8_t> b) { return corows::looks_like_tls_record(b); };
    BOOST_TEST(tls({0x15, 0x03, 0x01, 0x00, 0x02}));   // an alert, TLS 1.0 record version
    BOOST_TEST(tls({0x16, 0x03, 0x03}));               // a handshake record, TLS 1.2
    BOOST_TEST(tls({0x16, 0x03, 0x04}));
    BOOST_TEST(!tls({0x16, 0x03, 0x05}));
    BOOST_TEST(!tls({0x17, 0x03, 0x03}));              // application data is no answer
    BOOST_TEST(!tls({0x15, 0x02, 0x00}));
    BOOST_TEST(!tls({0x15, 0x03}));                    // too short to tell
    BOOST_TEST(!tls({'H', 'T', 'T', 'P'}));
}

BOOST_AUTO_TEST_CASE(busy_answers_are_fixed_bytes) {
    BOOST_TEST(corows::busy_response(429) ==
               "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    BOOST_TEST(corows::busy_response(503) ==
               "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    BOOST_TEST(corows::busy_response(500) == corows::busy_response(503));
}

BOOST_AUTO_TEST_SUITE_END()
