// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/http_body.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using corows::http_body_decoder;
using corows::http_parse_status;

// What a decoder made from nothing ends at after `input`, fed in the pieces `cuts` make.
struct outcome {
    http_parse_status status = http_parse_status::need_more;
    std::error_code error;
    std::string body;
    std::size_t consumed = 0;
};

outcome run(const std::function<http_body_decoder()>& make, std::string_view input, const std::vector<std::size_t>& cuts) {
    http_body_decoder d = make();
    outcome o;
    o.status = d.status();
    std::size_t from = 0;
    auto feed = [&](std::size_t to) {
        if (o.status != http_parse_status::need_more) return;
        auto r = d.feed(input.substr(from, to - from), o.body);
        o.status = r.status;
        o.error = r.error;
        o.consumed += r.consumed;
        // A decoder that still needs more has taken every byte it was given.
        if (r.status == http_parse_status::need_more) BOOST_TEST(r.consumed == to - from);
        from = to;
    };
    for (auto c : cuts) feed(c);
    feed(input.size());
    BOOST_TEST((d.status() == o.status));
    return o;
}

// Checks `input` whole, byte by byte and at every two-part split: each way gives `status`,
// `error`, `body` and (unless failed) `consumed` bytes taken.
void check_every_split(const std::function<http_body_decoder()>& make, std::string_view input,
                       http_parse_status status, std::error_code error, std::string_view body, std::size_t consumed) {
    std::vector<std::vector<std::size_t>> ways{{}};
    std::vector<std::size_t> bytes;
    for (std::size_t i = 1; i < input.size(); ++i) {
        ways.push_back({i});
        bytes.push_back(i);
    }
    ways.push_back(bytes);
    for (const auto& cuts : ways) {
        BOOST_TEST_CONTEXT("input " << input.substr(0, 60) << " cut " << cuts.size() << " at " << (cuts.empty() ? 0 : cuts.front())) {
            auto o = run(make, input, cuts);
            BOOST_TEST((o.status == status));
            BOOST_TEST(o.error == error);
            BOOST_TEST(o.body == body);
            if (status != http_parse_status::failed) BOOST_TEST(o.consumed == consumed);
        }
    }
}

const std::error_code none;

corows::http_request request(std::vector<corows::http_field> fields) {
    corows::http_request r;
    r.method = "POST";
    r.target = "/";
    for (auto& f : fields) r.fields.add(f.name, f.value);
    return r;
}

corows::http_response response(unsigned status, std::vector<corows::http_field> fields) {
    corows::http_response r;
    r.status = status;
    for (auto& f : fields) r.fields.add(f.name, f.value);
    return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_body)

BOOST_AUTO_TEST_CASE(a_length_body_takes_exactly_its_bytes_at_every_split) {
    auto five = [] { return http_body_decoder::with_length(5); };
    check_every_split(five, "hello", http_parse_status::complete, none, "hello", 5);
    // The next request stays with the caller.
    check_every_split(five, "helloGET / HTTP/1.1\r\n", http_parse_status::complete, none, "hello", 5);
    check_every_split(five, "hell", http_parse_status::need_more, none, "hell", 4);
    check_every_split([] { return http_body_decoder::with_length(0); }, "GET", http_parse_status::complete, none, "", 0);
    check_every_split([] { return http_body_decoder(); }, "x", http_parse_status::complete, none, "", 0);
}

BOOST_AUTO_TEST_CASE(a_chunked_body_decodes_at_every_split) {
    auto chunked = [] { return http_body_decoder::chunked(1024); };
    const std::string whole = "5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
    check_every_split(chunked, whole, http_parse_status::complete, none, "hello world", whole.size());
    check_every_split(chunked, whole + "NEXT", http_parse_status::complete, none, "hello world", whole.size());
    check_every_split(chunked, "A\r\n0123456789\r\n0\r\n\r\n", http_parse_status::complete, none, "0123456789", 20);
    check_every_split(chunked, "0\r\n\r\n", http_parse_status::complete, none, "", 5);
    check_every_split(chunked, "5\r\nhel", http_parse_status::need_more, none, "hel", 6);
}

BOOST_AUTO_TEST_CASE(bad_chunked_bodies_fail_the_same_at_every_split) {
    auto chunked = [] { return http_body_decoder::chunked(10); };
    const auto bad = make_error_code(corows::error::bad_chunked_encoding);
    const auto large = make_error_code(corows::error::body_too_large);
    check_every_split(chunked, "x\r\n", http_parse_status::failed, bad, "", 0);
    check_every_split(chunked, "5\nhello\r\n", http_parse_status::failed, bad, "", 0);
    check_every_split(chunked, "5\r\nhelloX", http_parse_status::failed, bad, "hello", 0);
    check_every_split(chunked, "0\r\nbad\ntrailer\r\n\r\n", http_parse_status::failed, bad, "", 0);
    // Over the limit: the chunk that would pass it is refused before any of its data.
    check_every_split(chunked, "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", http_parse_status::failed, large, "hello", 0);
    check_every_split(chunked, "B\r\n", http_parse_status::failed, large, "", 0);
    check_every_split(chunked, "A\r\n0123456789\r\n0\r\n\r\n", http_parse_status::complete, none, "0123456789", 20);
}

BOOST_AUTO_TEST_CASE(until_close_keeps_a_bounded_prefix) {
    auto four = [] { return http_body_decoder::until_close(4); };
    check_every_split(four, "abcdefgh", http_parse_status::complete, none, "abcd", 4);
    check_every_split(four, "abc", http_parse_status::need_more, none, "abc", 3);
    BOOST_TEST((http_body_decoder::until_close(4).kind() == http_body_decoder::framing::until_close));
}

BOOST_AUTO_TEST_CASE(a_request_body_is_framed_by_its_fields) {
    http_body_decoder d;
    BOOST_TEST(!corows::request_body_decoder(request({}), 100, d));
    BOOST_TEST((d.status() == http_parse_status::complete));
    BOOST_TEST(!corows::request_body_decoder(request({{"Content-Length", "7"}}), 100, d));
    BOOST_TEST((d.kind() == http_body_decoder::framing::length));
    BOOST_TEST(d.remaining() == 7u);
    BOOST_TEST(!corows::request_body_decoder(request({{"Content-Length", "100"}}), 100, d));
    BOOST_TEST(!corows::request_body_decoder(request({{"Transfer-Encoding", "chunked"}}), 100, d));
    BOOST_TEST((d.kind() == http_body_decoder::framing::chunked));
    BOOST_TEST(d.remaining() == 0u);
}

BOOST_AUTO_TEST_CASE(a_request_body_is_refused_with_the_framing_error) {
    http_body_decoder d;
    using corows::error;
    auto refused = [&](std::vector<corows::http_field> f) { return corows::request_body_decoder(request(f), 100, d); };
    BOOST_TEST(refused({{"Content-Length", "101"}}) == error::body_too_large);
    BOOST_TEST(refused({{"Content-Length", "x"}}) == error::bad_content_length);
    BOOST_TEST(refused({{"Content-Length", "5"}, {"Content-Length", "6"}}) == error::bad_content_length);
    BOOST_TEST(refused({{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}) == error::conflicting_length);
    BOOST_TEST(refused({{"Transfer-Encoding", "gzip, chunked"}}) == error::length_required);
    BOOST_TEST(refused({{"Transfer-Encoding", "gzip"}}) == error::length_required);
    // A list of equal lengths is one length (RFC 9110 §8.6).
    BOOST_TEST(!refused({{"Content-Length", "5, 5"}}));
    BOOST_TEST(d.remaining() == 5u);
}

BOOST_AUTO_TEST_CASE(a_response_body_is_framed_and_bounded) {
    using framing = http_body_decoder::framing;
    auto d = corows::response_body_decoder(response(403, {{"Content-Length", "3"}}), "GET", 100);
    BOOST_TEST((d.kind() == framing::length));
    BOOST_TEST(d.remaining() == 3u);
    // Cut to what the caller keeps.
    d = corows::response_body_decoder(response(403, {{"Content-Length", "1000"}}), "GET", 100);
    BOOST_TEST(d.remaining() == 100u);
    d = corows::response_body_decoder(response(403, {{"Transfer-Encoding", "chunked"}}), "GET", 100);
    BOOST_TEST((d.kind() == framing::chunked));
    for (auto f : std::vector<std::vector<corows::http_field>>{
             {}, {{"Transfer-Encoding", "gzip"}}, {{"Content-Length", "x"}},
             {{"Content-Length", "3"}, {"Transfer-Encoding", "chunked"}}}) {
        d = corows::response_body_decoder(response(403, f), "GET", 100);
        BOOST_TEST((d.kind() == framing::until_close));
        BOOST_TEST(d.remaining() == 100u);
    }
    for (unsigned status : {100u, 101u, 199u, 204u, 304u}) {
        d = corows::response_body_decoder(response(status, {{"Content-Length", "3"}}), "GET", 100);
        BOOST_TEST((d.status() == http_parse_status::complete));
    }
    d = corows::response_body_decoder(response(200, {{"Content-Length", "3"}}), "HEAD", 100);
    BOOST_TEST((d.status() == http_parse_status::complete));
}

BOOST_AUTO_TEST_CASE(bodiless_statuses) {
    for (unsigned s : {100u, 101u, 103u, 199u, 204u, 304u}) BOOST_TEST(corows::response_has_no_body(s));
    for (unsigned s : {200u, 201u, 203u, 205u, 206u, 300u, 303u, 305u, 400u, 500u})
        BOOST_TEST(!corows::response_has_no_body(s));
    BOOST_TEST(corows::response_has_no_body(200, "HEAD"));
    BOOST_TEST(!corows::response_has_no_body(200, "GET"));
    // Methods are case-sensitive (RFC 9110 §9.1).
    BOOST_TEST(!corows::response_has_no_body(200, "head"));
}

BOOST_AUTO_TEST_CASE(expect_continue_needs_http_1_1_and_the_token) {
    auto with = [](unsigned version, std::vector<corows::http_field> f) {
        auto r = request(std::move(f));
        r.version = version;
        return corows::expects_continue(r);
    };
    BOOST_TEST(with(11, {{"Expect", "100-continue"}}));
    BOOST_TEST(with(11, {{"Expect", "100-Continue"}}));
    BOOST_TEST(!with(10, {{"Expect", "100-continue"}}));
    BOOST_TEST(!with(11, {}));
    BOOST_TEST(!with(11, {{"Expect", "something-else"}}));
    BOOST_TEST(corows::continue_response == "HTTP/1.1 100 Continue\r\n\r\n");
}

BOOST_AUTO_TEST_SUITE_END()
