// SPDX-License-Identifier: BSL-1.0
#include <corows/protocol/http.hpp>
#include <corows/protocol/query.hpp>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

using corows::query_param;

namespace {
// An optional value as the test log shows it.
std::string shown(const std::optional<std::string>& v) { return v ? "\"" + *v + "\"" : "none"; }
} // namespace

BOOST_AUTO_TEST_SUITE(query)

BOOST_AUTO_TEST_CASE(percent_decode_decodes_escapes_and_keeps_malformed_ones) {
    BOOST_TEST(corows::percent_decode("a%20b%2Fc%2fd") == "a b/c/d");
    BOOST_TEST(corows::percent_decode("a+b") == "a+b");
    BOOST_TEST(corows::percent_decode("a+b", true) == "a b");
    BOOST_TEST(corows::percent_decode("%2B", true) == "+");
    // As browsers do: a '%' without two hex digits after it stays.
    BOOST_TEST(corows::percent_decode("100%") == "100%");
    BOOST_TEST(corows::percent_decode("%4") == "%4");
    BOOST_TEST(corows::percent_decode("%zz%41") == "%zzA");
    BOOST_TEST(corows::percent_decode("%%41") == "%A");
    // Bytes, whatever they are: NUL and invalid UTF-8 included.
    BOOST_TEST(corows::percent_decode("%00%FF") == std::string("\0\xff", 2));
    BOOST_TEST(corows::percent_decode("%C3%A9") == "\xc3\xa9");
}

BOOST_AUTO_TEST_CASE(strict_decoding_refuses_a_malformed_escape) {
    BOOST_TEST(shown(corows::percent_decode_strict("p%40ss")) == shown(std::string("p@ss")));
    BOOST_TEST(shown(corows::percent_decode_strict("a+b")) == shown(std::string("a+b")));
    BOOST_TEST(!corows::percent_decode_strict("100%"));
    BOOST_TEST(!corows::percent_decode_strict("%4"));
    BOOST_TEST(!corows::percent_decode_strict("%g0"));
}

BOOST_AUTO_TEST_CASE(parse_query_keeps_order_repeats_and_empty_values) {
    const std::vector<query_param> want{{"room", "lobby"}, {"tag", "a b"}, {"tag", "c&d"}, {"debug", ""}, {"", "x"},
                                        {"e", "=f"}};
    BOOST_TEST((corows::parse_query("room=lobby&tag=a+b&tag=c%26d&&debug&=x&e==f") == want));
    BOOST_TEST(corows::parse_query("").empty());
    BOOST_TEST(corows::parse_query("&&&").empty());
}

BOOST_AUTO_TEST_CASE(a_request_finds_its_parameters_by_decoded_name) {
    corows::http_request req;
    req.target = "/ticker?symbol=BRK%2EA&my+key=1&tag=x&tag=y&flag#frag";
    BOOST_TEST(shown(req.query_param("symbol")) == shown(std::string("BRK.A")));
    BOOST_TEST(shown(req.query_param("my key")) == shown(std::string("1")));
    BOOST_TEST(shown(req.query_param("tag")) == shown(std::string("x")));
    BOOST_TEST((req.query_params("tag") == std::vector<std::string>{"x", "y"}));
    BOOST_TEST(shown(req.query_param("flag")) == shown(std::string("")));
    BOOST_TEST(!req.query_param("absent"));
    BOOST_TEST(req.query_params("absent").empty());
    // The fragment is not part of the query.
    BOOST_TEST(!req.query_param("frag"));
    req.target = "/ws";
    BOOST_TEST(!req.query_param("symbol"));
    // absolute-form targets too (RFC 9112 §3.2.2).
    req.target = "http://example.com/ws?token=a%2Bb";
    BOOST_TEST(shown(req.query_param("token")) == shown(std::string("a+b")));
}

BOOST_AUTO_TEST_CASE(a_query_of_many_pieces_is_read_in_one_pass) {
    // The cheapest costly input: as many '&' as a request head may carry, and one match at the end.
    std::string q;
    for (int i = 0; i < 4000; ++i) q += "&a";
    q += "&b=found";
    BOOST_TEST(shown(corows::find_query_param(q, "b")) == shown(std::string("found")));
    BOOST_TEST(corows::find_query_params(q, "a").size() == 4000u);
    BOOST_TEST(corows::parse_query(q).size() == 4001u);
}

BOOST_AUTO_TEST_SUITE_END()
