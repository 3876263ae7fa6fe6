// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/http.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using corows::http_parse_status;

// RFC 6455 §1.2, followed by the first frame the client sends (a masked text frame), as it
// would arrive in one packet from a client that does not wait for the 101.
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
const std::string first_frame = "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58";

const std::string rfc_response =
    "HTTP/1.1 101 Switching Protocols\r\n"
    "Upgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
    "Sec-WebSocket-Protocol: chat\r\n"
    "\r\n";

std::span<const std::uint8_t> bytes_of(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Feeds `text` in pieces of at most `chunk` bytes until the parser stops asking for more;
// returns the total consumed.
template <class Parser>
std::size_t feed_chunks(Parser& p, std::string_view text, std::size_t chunk) {
    std::size_t pos = 0;
    while (pos < text.size() && p.status() == http_parse_status::need_more) {
        const auto r = p.feed(text.substr(pos, chunk));
        pos += r.consumed;
        if (r.status == http_parse_status::need_more)
            BOOST_TEST_REQUIRE(r.consumed == std::min(chunk, text.size() - (pos - r.consumed)));
    }
    return pos;
}

template <class Parser>
std::size_t feed_split(Parser& p, std::string_view text, std::size_t split) {
    auto r = p.feed(text.substr(0, split));
    std::size_t pos = r.consumed;
    if (r.status == http_parse_status::need_more) {
        BOOST_TEST_REQUIRE(r.consumed == split);
        pos += p.feed(text.substr(split)).consumed;
    }
    return pos;
}

bool same_fields(const corows::http_fields& a, const corows::http_fields& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a.all()[i].name != b.all()[i].name || a.all()[i].value != b.all()[i].value)
            return false;
    return true;
}

bool same(const corows::http_request& a, const corows::http_request& b) {
    return a.method == b.method && a.target == b.target && a.version == b.version &&
           same_fields(a.fields, b.fields);
}

bool same(const corows::http_response& a, const corows::http_response& b) {
    return a.status == b.status && a.reason == b.reason && a.version == b.version &&
           same_fields(a.fields, b.fields);
}

corows::http_request parse_request(std::string_view text, corows::http_limits limits = {}) {
    corows::http_request_parser p(limits);
    const auto r = p.feed(text);
    BOOST_TEST_REQUIRE((r.status == http_parse_status::complete), "not complete: " << text);
    return p.release();
}

std::error_code request_error(std::string_view text, corows::http_limits limits = {}) {
    corows::http_request_parser p(limits);
    const auto r = p.feed(text);
    BOOST_TEST((r.status != http_parse_status::complete), "unexpectedly complete: " << text);
    if (r.status == http_parse_status::failed) {
        BOOST_TEST((p.status() == http_parse_status::failed));
        BOOST_TEST((p.error() == r.error));
    }
    return r.error;
}

std::error_code response_error(std::string_view text) {
    corows::http_response_parser p;
    return p.feed(text).error;
}

} // namespace

BOOST_AUTO_TEST_SUITE(http)

BOOST_AUTO_TEST_CASE(rfc6455_request_parses_and_leaves_the_frame) {
    corows::http_request_parser p;
    const auto packet = rfc_request + first_frame;
    const auto r = p.feed(bytes_of(packet));
    BOOST_TEST((r.status == http_parse_status::complete));
    BOOST_TEST(!r.error);
    BOOST_TEST(r.consumed == rfc_request.size());
    const auto& req = p.get();
    BOOST_TEST(req.method == "GET");
    BOOST_TEST(req.target == "/chat");
    BOOST_TEST(req.version == 11u);
    BOOST_TEST(req.fields.size() == 7u);
    BOOST_TEST(req.fields.all()[0].name == "Host");
    BOOST_TEST(req.fields.all()[0].value == "server.example.com");
    BOOST_TEST(req.fields.all()[6].name == "Sec-WebSocket-Version");
    BOOST_TEST(req.fields.all()[6].value == "13");
    BOOST_TEST(*req.find("sec-websocket-key") == "dGhlIHNhbXBsZSBub25jZQ==");

    // Once complete, nothing more is consumed.
    const auto again = p.feed(first_frame);
    BOOST_TEST(again.consumed == 0u);
    BOOST_TEST((again.status == http_parse_status::complete));
}

BOOST_AUTO_TEST_CASE(rfc6455_response_parses) {
    corows::http_response_parser p;
    const auto packet = rfc_response + "\x81\x02hi";
    const auto r = p.feed(packet);
    BOOST_TEST((r.status == http_parse_status::complete));
    BOOST_TEST(r.consumed == rfc_response.size());
    const auto& res = p.get();
    BOOST_TEST(res.version == 11u);
    BOOST_TEST(res.status == 101u);
    BOOST_TEST(res.reason == "Switching Protocols");
    BOOST_TEST(res.fields.size() == 4u);
    BOOST_TEST(*res.find("SEC-WEBSOCKET-ACCEPT") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    BOOST_TEST(res.has_token("connection", "upgrade"));
}

BOOST_AUTO_TEST_CASE(every_split_point_of_a_request_gives_the_same_result) {
    const auto packet = rfc_request + first_frame;
    const auto whole = parse_request(rfc_request);
    for (std::size_t split = 0; split <= packet.size(); ++split) {
        corows::http_request_parser p;
        const auto consumed = feed_split(p, packet, split);
        BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete), "split " << split);
        BOOST_TEST(consumed == rfc_request.size(), "split " << split);
        BOOST_TEST(same(p.get(), whole), "split " << split);
    }
}

BOOST_AUTO_TEST_CASE(every_split_point_of_a_response_gives_the_same_result) {
    const auto packet = rfc_response + "\x82\x03" "abc";
    corows::http_response_parser ref;
    ref.feed(rfc_response);
    BOOST_TEST_REQUIRE((ref.status() == http_parse_status::complete));
    for (std::size_t split = 0; split <= packet.size(); ++split) {
        corows::http_response_parser p;
        const auto consumed = feed_split(p, packet, split);
        BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete), "split " << split);
        BOOST_TEST(consumed == rfc_response.size(), "split " << split);
        BOOST_TEST(same(p.get(), ref.get()), "split " << split);
    }
}

BOOST_AUTO_TEST_CASE(byte_at_a_time_gives_the_same_result) {
    const auto packet = rfc_request + first_frame;
    corows::http_request_parser p;
    BOOST_TEST(feed_chunks(p, packet, 1) == rfc_request.size());
    BOOST_TEST((p.status() == http_parse_status::complete));
    BOOST_TEST(same(p.get(), parse_request(rfc_request)));

    corows::http_response_parser q;
    BOOST_TEST(feed_chunks(q, rfc_response + "\x81", 1) == rfc_response.size());
    BOOST_TEST((q.status() == http_parse_status::complete));
    BOOST_TEST(q.get().status == 101u);
}

BOOST_AUTO_TEST_CASE(empty_feed_consumes_nothing) {
    corows::http_request_parser p;
    const auto r = p.feed(std::string_view{});
    BOOST_TEST(r.consumed == 0u);
    BOOST_TEST((r.status == http_parse_status::need_more));
}

BOOST_AUTO_TEST_CASE(names_are_case_insensitive_and_tokens_are_found_in_lists) {
    const auto req = parse_request("GET / HTTP/1.1\r\n"
                                   "hOsT: a\r\n"
                                   "connection: keep-alive, Upgrade\r\n"
                                   "UPGRADE: WebSocket\r\n"
                                   "X-List: ,a,,  b ,\t c\t,\r\n"
                                   "\r\n");
    BOOST_TEST(*req.find("Host") == "a");
    BOOST_TEST(req.has_token("Connection", "upgrade"));
    BOOST_TEST(req.has_token("CONNECTION", "KEEP-ALIVE"));
    BOOST_TEST(!req.has_token("Connection", "close"));
    BOOST_TEST(!req.has_token("Connection", "upgrad"));
    BOOST_TEST(!req.has_token("Connection", "keep-alive, Upgrade"));
    BOOST_TEST(req.has_token("upgrade", "websocket"));
    BOOST_TEST(!req.has_token("Missing", "x"));
    BOOST_TEST(!req.find("Missing"));
    const auto list = req.fields.list("x-list");
    BOOST_TEST(list == (std::vector<std::string_view>{"a", "b", "c"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(repeated_fields_are_kept_and_joined_on_request) {
    const auto req = parse_request("GET / HTTP/1.1\r\n"
                                   "Host: h\r\n"
                                   "Sec-WebSocket-Protocol: chat\r\n"
                                   "X-Other: 1\r\n"
                                   "sec-websocket-protocol: superchat, v2\r\n"
                                   "\r\n");
    BOOST_TEST(req.fields.count("Sec-WebSocket-Protocol") == 2u);
    BOOST_TEST(*req.find("Sec-WebSocket-Protocol") == "chat");
    BOOST_TEST(*req.fields.joined("Sec-WebSocket-Protocol") == "chat, superchat, v2");
    BOOST_TEST(*req.fields.joined("X-Other") == "1");
    BOOST_TEST(!req.fields.joined("X-None"));
    const auto values = req.fields.values("SEC-WEBSOCKET-PROTOCOL");
    BOOST_TEST(values == (std::vector<std::string_view>{"chat", "superchat, v2"}),
               boost::test_tools::per_element());
    const auto list = req.fields.list("Sec-WebSocket-Protocol");
    BOOST_TEST(list == (std::vector<std::string_view>{"chat", "superchat", "v2"}),
               boost::test_tools::per_element());
    BOOST_TEST(req.has_token("Sec-WebSocket-Protocol", "V2"));
}

BOOST_AUTO_TEST_CASE(ows_is_trimmed_and_inner_spaces_kept) {
    const auto req = parse_request("GET / HTTP/1.1\r\n"
                                   "A:value\r\n"
                                   "B: \t spaced  out \t \r\n"
                                   "C:\r\n"
                                   "D:   \r\n"
                                   "E: caf\xc3\xa9\r\n"
                                   "\r\n");
    BOOST_TEST(*req.find("A") == "value");
    BOOST_TEST(*req.find("B") == "spaced  out");
    BOOST_TEST(*req.find("C") == "");
    BOOST_TEST(*req.find("D") == "");
    BOOST_TEST(*req.find("E") == "caf\xc3\xa9"); // obs-text is passed through
}

BOOST_AUTO_TEST_CASE(folded_lines_join_with_one_space) {
    const auto req = parse_request("GET / HTTP/1.1\r\n"
                                   "X-Folded: first  \r\n"
                                   "   second\r\n"
                                   "\t third \r\n"
                                   " \r\n"
                                   "Y: y\r\n"
                                   "Z:\r\n"
                                   " only\r\n"
                                   "\r\n");
    BOOST_TEST(req.fields.size() == 3u);
    BOOST_TEST(*req.find("X-Folded") == "first second third");
    BOOST_TEST(*req.find("Y") == "y");
    BOOST_TEST(*req.find("Z") == "only");
}

BOOST_AUTO_TEST_CASE(a_fold_counts_against_size_but_not_field_count) {
    corows::http_limits limits;
    limits.max_fields = 1;
    const auto req = parse_request("GET / HTTP/1.1\r\nA: 1\r\n 2\r\n 3\r\n\r\n", limits);
    BOOST_TEST(*req.find("A") == "1 2 3");
}

BOOST_AUTO_TEST_CASE(leading_empty_lines_are_skipped) {
    const std::string text = "\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n";
    for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, text.size()}) {
        corows::http_request_parser p;
        BOOST_TEST(feed_chunks(p, text, chunk) == text.size());
        BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete));
        BOOST_TEST(p.get().target == "/x");
        BOOST_TEST(p.get().fields.size() == 1u);
    }
}

BOOST_AUTO_TEST_CASE(path_and_query) {
    struct row { std::string_view target, path, query; };
    const row rows[] = {
        {"/chat", "/chat", ""},
        {"/chat?room=1&x=2", "/chat", "room=1&x=2"},
        {"/?", "/", ""},
        {"/a/b?q#frag", "/a/b", "q"},
        {"ws://example.com/live?x=1", "/live", "x=1"},
        {"http://example.com:8080", "/", ""},
        {"http://example.com?q", "/", "q"},
        {"*", "*", ""},
    };
    for (const auto& r : rows) {
        corows::http_request req;
        req.target = r.target;
        BOOST_TEST(req.path() == r.path, r.target);
        BOOST_TEST(req.query() == r.query, r.target);
    }
}

BOOST_AUTO_TEST_CASE(versions) {
    BOOST_TEST(parse_request("GET / HTTP/1.0\r\n\r\n").version == 10u);
    BOOST_TEST(parse_request("GET / HTTP/1.1\r\n\r\n").version == 11u);
    BOOST_TEST(parse_request("GET / HTTP/2.0\r\n\r\n").version == 20u);
}

BOOST_AUTO_TEST_CASE(malformed_request_heads) {
    const auto parse_error = make_error_code(corows::error::http_parse_error);
    const std::string_view bad[] = {
        "GET /\r\n\r\n",                            // no version
        "GET  / HTTP/1.1\r\n\r\n",                  // double space
        "GET / HTTP/1.1 \r\n\r\n",                  // trailing space
        " GET / HTTP/1.1\r\n\r\n",                  // leading space
        "G(T / HTTP/1.1\r\n\r\n",                   // method not a token
        "GET / HTTP/11\r\n\r\n",
        "GET / HTTP/1.1x\r\n\r\n",
        "GET / http/1.1\r\n\r\n",                   // HTTP-name is case-sensitive
        "GET / HTTP/a.1\r\n\r\n",
        "GET /\xff HTTP/1.1\r\n\r\n",               // raw non-ASCII in target
        "GET /a\x7f HTTP/1.1\r\n\r\n",              // DEL
        "GET / HTTP/1.1\r\nHost : h\r\n\r\n",       // space before colon
        "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\n: empty name\r\n\r\n",
        "GET / HTTP/1.1\r\nBad[name]: v\r\n\r\n",
        "GET / HTTP/1.1\r\n folded: first\r\n\r\n",  // continuation of the start line
        "GET / HTTP/1.1\nHost: h\r\n\r\n",          // bare LF
        "GET / HTTP/1.1\r\nHost: h\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\n\n",
        "\nGET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\rX\r\n\r\n",     // bare CR
        "GET / HTTP/1.1\r\n\rX",
        "\rGET / HTTP/1.1\r\n\r\n",
        std::string_view("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n", 29), // NUL
        std::string_view("GET /\0 HTTP/1.1\r\n\r\n", 20),
        std::string_view("\0GET / HTTP/1.1\r\n\r\n", 19),
        "GET / HTTP/1.1\r\nX: \x01\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n",
        "GET / HTTP/1.1\r\n\x1b: v\r\n\r\n",
    };
    for (auto text : bad) {
        BOOST_TEST((request_error(text) == parse_error), text);
        // The verdict does not depend on how the bytes arrive.
        corows::http_request_parser p;
        feed_chunks(p, text, 1);
        BOOST_TEST((p.status() == http_parse_status::failed), text);
        BOOST_TEST((p.error() == parse_error), text);
    }
}

BOOST_AUTO_TEST_CASE(control_bytes_fail_as_soon_as_they_arrive) {
    corows::http_request_parser p;
    BOOST_TEST((p.feed("GET / HT").status == http_parse_status::need_more));
    const auto r = p.feed(std::string_view("\0", 1));
    BOOST_TEST((r.status == http_parse_status::failed));
    BOOST_TEST((r.error == corows::error::http_parse_error));
    BOOST_TEST(p.feed("TP/1.1\r\n\r\n").consumed == 0u);
    BOOST_TEST((p.status() == http_parse_status::failed));
}

BOOST_AUTO_TEST_CASE(head_size_limit_is_exact) {
    const std::string head = "GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n";
    corows::http_limits limits;
    limits.max_head_size = head.size();
    BOOST_TEST(parse_request(head, limits).fields.size() == 1u);

    limits.max_head_size = head.size() - 1;
    BOOST_TEST((request_error(head, limits) == corows::error::header_too_large));

    // An endless head fails once over the limit, without waiting for a blank line.
    limits.max_head_size = 64;
    corows::http_request_parser p(limits);
    const std::string endless = "GET / HTTP/1.1\r\nX: " + std::string(1000, 'a');
    const auto r = p.feed(endless);
    BOOST_TEST((r.status == http_parse_status::failed));
    BOOST_TEST((r.error == corows::error::header_too_large));

    // Leading empty lines count too: they cannot keep a parser busy forever.
    corows::http_request_parser q(limits);
    std::string blank;
    for (int i = 0; i < 40; ++i) blank += "\r\n";
    BOOST_TEST((q.feed(blank).error == corows::error::header_too_large));
}

BOOST_AUTO_TEST_CASE(default_size_limit_is_8_kib) {
    const std::string prefix = "GET / HTTP/1.1\r\nX: ";
    const std::string suffix = "\r\n\r\n";
    const auto fill = 8192 - prefix.size() - suffix.size();
    BOOST_TEST(parse_request(prefix + std::string(fill, 'v') + suffix).fields.size() == 1u);
    BOOST_TEST((request_error(prefix + std::string(fill + 1, 'v') + suffix) ==
                corows::error::header_too_large));
}

BOOST_AUTO_TEST_CASE(field_count_limit_is_exact) {
    corows::http_limits limits;
    limits.max_fields = 3;
    const std::string three = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    BOOST_TEST(parse_request(three, limits).fields.size() == 3u);
    const std::string four = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    BOOST_TEST((request_error(four, limits) == corows::error::too_many_headers));

    std::string many = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 65; ++i) many += "X: 1\r\n";
    BOOST_TEST((request_error(many + "\r\n") == corows::error::too_many_headers));
}

BOOST_AUTO_TEST_CASE(status_lines) {
    corows::http_response_parser p;
    p.feed("HTTP/1.1 101\r\nUpgrade: websocket\r\n\r\n");
    BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete));
    BOOST_TEST(p.get().status == 101u);
    BOOST_TEST(p.get().reason == "");

    p.reset();
    p.feed("HTTP/1.0 404 Not  Found \r\n\r\n");
    BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete));
    BOOST_TEST(p.get().version == 10u);
    BOOST_TEST(p.get().status == 404u);
    BOOST_TEST(p.get().reason == "Not  Found ");

    p.reset();
    p.feed("HTTP/1.1 200 \r\n\r\n");
    BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete));
    BOOST_TEST(p.get().reason == "");

    const std::string_view bad[] = {
        "HTTP/1.1\r\n\r\n",
        "HTTP/1.1 10\r\n\r\n",
        "HTTP/1.1 1011\r\n\r\n",
        "HTTP/1.1 10a OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/1.1 600 High\r\n\r\n",
        "HTTP/1.1  101 Switching\r\n\r\n",
        "HTTP/1.1\t101 Switching\r\n\r\n",
        "HTTP/1.1 101\tSwitching\r\n\r\n",
        "HTTP/1 101 Switching\r\n\r\n",
        "ICY 200 OK\r\n\r\n",
        "HTTP/1.1 101 OK\r\nUpgrade websocket\r\n\r\n",
        "HTTP/1.1 101 OK\r\nUpgrade: websocket\n\r\n",
    };
    for (auto text : bad)
        BOOST_TEST((response_error(text) == corows::error::http_parse_error), text);
}

BOOST_AUTO_TEST_CASE(pipelined_requests_with_reset) {
    const std::string one = "GET /one HTTP/1.1\r\nHost: h\r\n\r\n";
    const std::string two = "GET /two?x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    const std::string stream = one + two + "tail";
    corows::http_request_parser p;
    auto r = p.feed(stream);
    BOOST_TEST(r.consumed == one.size());
    BOOST_TEST(p.get().target == "/one");
    p.reset();
    r = p.feed(std::string_view(stream).substr(one.size()));
    BOOST_TEST(r.consumed == two.size());
    BOOST_TEST((r.status == http_parse_status::complete));
    BOOST_TEST(p.get().path() == "/two");
    BOOST_TEST(p.get().query() == "x");
    BOOST_TEST(p.get().fields.size() == 2u);

    // reset() also clears a failure.
    p.reset();
    BOOST_TEST((p.feed("BAD\r\n\r\n").status == http_parse_status::failed));
    p.reset();
    BOOST_TEST(!p.error());
    BOOST_TEST((p.feed(one).status == http_parse_status::complete));
}

BOOST_AUTO_TEST_CASE(to_string_writes_the_wire_form) {
    corows::http_request req;
    req.method = "GET";
    req.target = "/a?b";
    req.fields.add("Host", "example.com:8080");
    req.fields.add("X-Empty", "");
    BOOST_TEST(req.to_string() == "GET /a?b HTTP/1.1\r\nHost: example.com:8080\r\nX-Empty: \r\n\r\n");

    corows::http_response res;
    res.status = 404;
    res.reason = "Not Found";
    res.version = 10;
    BOOST_TEST(res.to_string() == "HTTP/1.0 404 Not Found\r\n\r\n");

    corows::http_request_parser p;
    p.feed(rfc_request);
    BOOST_TEST(p.get().to_string() == rfc_request);
    corows::http_response_parser q;
    q.feed(rfc_response);
    BOOST_TEST(q.get().to_string() == rfc_response);
}

BOOST_AUTO_TEST_CASE(fields_add_set_erase) {
    corows::http_fields f;
    BOOST_TEST(f.empty());
    f.add("A", "1");
    f.add("b", "2");
    f.add("a", "3");
    BOOST_TEST(f.count("A") == 2u);
    f.set("A", "4");
    BOOST_TEST(f.count("a") == 1u);
    BOOST_TEST(*f.find("a") == "4");
    BOOST_TEST(f.all().back().name == "A");
    f.set("C", "5");
    BOOST_TEST(f.size() == 3u);
    BOOST_TEST(f.erase("B") == 1u);
    BOOST_TEST(f.erase("B") == 0u);
    BOOST_TEST(f.size() == 2u);
    f.add("Tab", "a\tb");
    BOOST_TEST(*f.find("tab") == "a\tb");
    f.clear();
    BOOST_TEST(f.empty());
}

BOOST_AUTO_TEST_CASE(fields_refuse_header_injection) {
    corows::http_fields f;
    BOOST_CHECK_THROW(f.add("X", "a\r\nSet-Cookie: evil"), std::invalid_argument);
    BOOST_CHECK_THROW(f.add("X", "a\nb"), std::invalid_argument);
    BOOST_CHECK_THROW(f.add("X", std::string_view("a\0b", 3)), std::invalid_argument);
    BOOST_CHECK_THROW(f.add("X", "a\x7f"), std::invalid_argument);
    BOOST_CHECK_THROW(f.add("X Y", "v"), std::invalid_argument);
    BOOST_CHECK_THROW(f.add("X:", "v"), std::invalid_argument);
    BOOST_CHECK_THROW(f.add("", "v"), std::invalid_argument);
    BOOST_CHECK_THROW(f.set("X\r\n", "v"), std::invalid_argument);
    BOOST_TEST(f.empty());
}

BOOST_AUTO_TEST_CASE(reason_phrases) {
    BOOST_TEST(corows::reason_phrase(101) == "Switching Protocols");
    BOOST_TEST(corows::reason_phrase(400) == "Bad Request");
    BOOST_TEST(corows::reason_phrase(405) == "Method Not Allowed");
    BOOST_TEST(corows::reason_phrase(426) == "Upgrade Required");
    BOOST_TEST(corows::reason_phrase(431) == "Request Header Fields Too Large");
    BOOST_TEST(corows::reason_phrase(201) == "Created");
    BOOST_TEST(corows::reason_phrase(411) == "Length Required");
    BOOST_TEST(corows::reason_phrase(505) == "HTTP Version Not Supported");
    BOOST_TEST(corows::reason_phrase(299) == "Unknown");
}

BOOST_AUTO_TEST_CASE(random_round_trips_in_random_pieces) {
    std::mt19937 rng(20240611);
    auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    const std::string tchars = "abcXYZ019!#$%&'*+-.^_`|~";
    const std::string vchars = "abc XYZ\t019!\"#(),/:;<=>?@[\\]{}\x80\xff";
    for (int iter = 0; iter < 300; ++iter) {
        corows::http_request req;
        req.method = iter % 3 == 0 ? "GET" : "PoST";
        req.target = "/";
        for (std::size_t n = pick(20); n > 0; --n) req.target += tchars[pick(tchars.size())];
        req.version = iter % 2 ? 11 : 10;
        for (std::size_t n = pick(12); n > 0; --n) {
            std::string name(1 + pick(10), 'x');
            for (auto& c : name) c = tchars[pick(tchars.size())];
            std::string value;
            for (std::size_t k = pick(30); k > 0; --k) value += vchars[pick(vchars.size())];
            // Values come back trimmed of OWS: store them trimmed.
            while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
            while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
            req.fields.add(name, value);
        }
        const auto text = req.to_string();
        const auto packet = text + "\x81\x80rest";
        corows::http_request_parser p;
        std::size_t pos = 0;
        while (p.status() == http_parse_status::need_more) {
            const auto n = 1 + pick(40);
            const auto r = p.feed(std::string_view(packet).substr(pos, n));
            pos += r.consumed;
        }
        BOOST_TEST_REQUIRE((p.status() == http_parse_status::complete), text);
        BOOST_TEST(pos == text.size());
        BOOST_TEST(same(p.get(), req), text);
    }
}

BOOST_AUTO_TEST_CASE(build_response_frames_the_body) {
    corows::http_response res;
    res.body = "hello";
    res.fields.add("Content-Type", "text/plain");
    BOOST_TEST(corows::build_response(res) ==
               "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
    BOOST_TEST(res.fields.size() == 1u); // the caller's response is left as it was

    corows::http_response empty;
    empty.status = 404;
    empty.reason = "Nope";
    BOOST_TEST(corows::build_response(empty) == "HTTP/1.1 404 Nope\r\nContent-Length: 0\r\n\r\n");

    corows::http_response framed;
    framed.fields.add("Transfer-Encoding", "chunked");
    framed.body = "5\r\nhello\r\n0\r\n\r\n";
    BOOST_TEST(corows::build_response(framed) ==
               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");

    corows::http_response no_content;
    no_content.status = 204;
    BOOST_TEST(corows::build_response(no_content) == "HTTP/1.1 204 No Content\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(chunked_bodies_decode_whole_or_byte_by_byte) {
    const std::string wire = "5\r\nhello\r\n6;name=value\r\n world\r\nA \r\n0123456789\r\n0\r\n"
                             "Trailer-Field: x\r\n\r\nGET /next HTTP/1.1\r\n";
    const auto end = wire.find("GET");
    {
        corows::http_chunked_decoder d(1024);
        std::string body;
        const auto r = d.feed(bytes_of(wire), body);
        BOOST_TEST((r.status == http_parse_status::complete));
        BOOST_TEST(r.consumed == end);
        BOOST_TEST(body == "hello world0123456789");
        // Once complete, nothing more is consumed.
        BOOST_TEST(d.feed(bytes_of(wire), body).consumed == 0u);
    }
    corows::http_chunked_decoder d(1024);
    std::string body;
    std::size_t consumed = 0;
    for (std::size_t i = 0; i < wire.size() && d.status() == http_parse_status::need_more; ++i)
        consumed += d.feed(bytes_of(std::string_view(wire).substr(i, 1)), body).consumed;
    BOOST_TEST((d.status() == http_parse_status::complete));
    BOOST_TEST(consumed == end);
    BOOST_TEST(body == "hello world0123456789");
}

BOOST_AUTO_TEST_CASE(bad_chunked_bodies) {
    struct row {
        std::string wire;
        corows::error expected;
        std::string body_before;
    };
    const row rows[] = {
        {"x\r\n", corows::error::bad_chunked_encoding, ""},
        {";ext\r\n", corows::error::bad_chunked_encoding, ""},
        {"5\nhello\r\n", corows::error::bad_chunked_encoding, ""},
        {"5\r\nhelloX", corows::error::bad_chunked_encoding, "hello"},
        {"5\r\nhello\r\r", corows::error::bad_chunked_encoding, "hello"},
        {"0\r\nbad\ntrailer\r\n\r\n", corows::error::bad_chunked_encoding, ""},
        {"0\r\n\rX", corows::error::bad_chunked_encoding, ""},
        {"4\r\nabcd\r\n7\r\n", corows::error::body_too_large, "abcd"},   // 4 + 7 > 10
        {"ffffffffffffffffffffffff\r\n", corows::error::body_too_large, ""},
        {"1;" + std::string(9000, 'e') + "\r\n", corows::error::bad_chunked_encoding, ""},
        {"0\r\nX: " + std::string(9000, 't') + "\r\n\r\n", corows::error::bad_chunked_encoding, ""},
    };
    for (const auto& r : rows) {
        corows::http_chunked_decoder d(10);
        std::string body;
        const auto result = d.feed(bytes_of(r.wire), body);
        BOOST_TEST((result.status == http_parse_status::failed), r.wire.substr(0, 40));
        BOOST_TEST((result.error == r.expected), r.wire.substr(0, 40) << ": " << result.error.message());
        BOOST_TEST(body == r.body_before);
        BOOST_TEST((d.status() == http_parse_status::failed));
    }
    // Up to the limit exactly is fine.
    corows::http_chunked_decoder d(10);
    std::string body;
    BOOST_TEST((d.feed(bytes_of("A\r\n0123456789\r\n0\r\n\r\n"), body).status == http_parse_status::complete));
}

BOOST_AUTO_TEST_CASE(chunked_only_means_one_coding) {
    auto with = [](std::vector<std::string> values) {
        corows::http_fields f;
        for (const auto& v : values) f.add("Transfer-Encoding", v);
        return corows::is_chunked_only(f);
    };
    BOOST_TEST(with({"chunked"}));
    BOOST_TEST(with({"Chunked"}));
    BOOST_TEST(!with({}));
    BOOST_TEST(!with({"gzip, chunked"}));
    BOOST_TEST(!with({"gzip", "chunked"}));
    BOOST_TEST(!with({"identity"}));
}

BOOST_AUTO_TEST_CASE(body_framing_of_fields) {
    struct row {
        std::vector<std::pair<std::string, std::string>> fields;
        corows::error expected; // reserved_opcode stands for "no error"
        bool te;
        bool has_cl;
        std::uint64_t cl;
    };
    const auto ok = corows::error::reserved_opcode;
    const row rows[] = {
        {{}, ok, false, false, 0},
        {{{"Content-Length", "0"}}, ok, false, true, 0},
        {{{"content-length", "42"}}, ok, false, true, 42},
        {{{"Content-Length", "7, 7"}}, ok, false, true, 7},
        {{{"Content-Length", "7"}, {"Content-Length", "7"}}, ok, false, true, 7},
        {{{"Content-Length", "18446744073709551615"}}, ok, false, true, UINT64_MAX},
        {{{"Transfer-Encoding", "chunked"}}, ok, true, false, 0},
        {{{"Content-Length", "7, 8"}}, corows::error::bad_content_length, false, false, 0},
        {{{"Content-Length", "7"}, {"Content-Length", "8"}}, corows::error::bad_content_length, false, false, 0},
        {{{"Content-Length", "+7"}}, corows::error::bad_content_length, false, false, 0},
        {{{"Content-Length", "7 8"}}, corows::error::bad_content_length, false, false, 0},
        {{{"Content-Length", ""}}, corows::error::bad_content_length, false, false, 0},
        {{{"Content-Length", "18446744073709551616"}}, corows::error::bad_content_length, false, false, 0},
        {{{"Content-Length", "3"}, {"Transfer-Encoding", "chunked"}}, corows::error::conflicting_length, false,
         false, 0},
    };
    for (const auto& r : rows) {
        corows::http_fields f;
        for (const auto& [n, v] : r.fields) f.add(n, v);
        corows::http_body_framing out;
        out.content_length = 12345; // must stay untouched on failure
        const auto ec = corows::body_framing(f, out);
        if (r.expected == ok) {
            BOOST_TEST(!ec, ec.message());
            BOOST_TEST(out.transfer_encoding == r.te);
            BOOST_TEST(out.has_content_length == r.has_cl);
            BOOST_TEST(out.content_length == r.cl);
        } else {
            BOOST_TEST((ec == r.expected), ec.message());
            BOOST_TEST(out.content_length == 12345u);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
