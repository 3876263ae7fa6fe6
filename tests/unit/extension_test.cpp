// SPDX-License-Identifier: BSL-1.0
#include <corows/error.hpp>
#include <corows/protocol/extension.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace {

using ext_list = std::vector<corows::extension>;
using corows::extension_param;

ext_list parse_ok(std::string_view header) {
    ext_list out;
    auto ec = corows::parse_extensions(header, out);
    BOOST_TEST(!ec, "unexpected error for: " << header);
    return out;
}

bool fails(std::string_view header) {
    ext_list out;
    return corows::parse_extensions(header, out) == corows::error::bad_extension;
}

extension_param p(std::string name) { return {std::move(name), std::nullopt}; }
extension_param p(std::string name, std::string value) { return {std::move(name), std::move(value)}; }

} // namespace

BOOST_AUTO_TEST_SUITE(extension)

BOOST_AUTO_TEST_CASE(single_extension_without_params) {
    auto v = parse_ok("permessage-deflate");
    BOOST_TEST_REQUIRE(v.size() == 1u);
    BOOST_TEST(v[0].name == "permessage-deflate");
    BOOST_TEST(v[0].params.empty());
}

BOOST_AUTO_TEST_CASE(browser_offer) {
    auto v = parse_ok("permessage-deflate; client_max_window_bits");
    BOOST_TEST_REQUIRE(v.size() == 1u);
    BOOST_TEST_REQUIRE(v[0].params.size() == 1u);
    BOOST_TEST((v[0].params[0] == p("client_max_window_bits")));
}

BOOST_AUTO_TEST_CASE(several_offers_with_params) {
    auto v = parse_ok("permessage-deflate; client_max_window_bits=10; server_no_context_takeover, "
                      "permessage-deflate; client_max_window_bits, x-webkit-deflate-frame");
    BOOST_TEST_REQUIRE(v.size() == 3u);
    ext_list want{
        {"permessage-deflate", {p("client_max_window_bits", "10"), p("server_no_context_takeover")}},
        {"permessage-deflate", {p("client_max_window_bits")}},
        {"x-webkit-deflate-frame", {}},
    };
    BOOST_TEST((v == want));
}

BOOST_AUTO_TEST_CASE(appends_to_existing_elements) {
    ext_list out{{"first", {}}};
    BOOST_TEST(!corows::parse_extensions("second", out));
    BOOST_TEST_REQUIRE(out.size() == 2u);
    BOOST_TEST(out[0].name == "first");
    BOOST_TEST(out[1].name == "second");
}

BOOST_AUTO_TEST_CASE(optional_whitespace_around_separators) {
    ext_list want{
        {"a", {p("x", "1"), p("y")}},
        {"b", {p("z", "q")}},
    };
    for (std::string_view h : {
             "a;x=1;y,b;z=q",
             "a; x=1; y, b; z=q",
             "  a ;  x = 1 ;\ty\t,\t b ; z= \"q\"  ",
             "a\t;\tx\t=\t1\t;\ty\t,\tb\t;\tz\t=\tq",
         }) {
        BOOST_TEST((parse_ok(h) == want), "header: " << h);
    }
}

BOOST_AUTO_TEST_CASE(quoted_values_are_unescaped) {
    auto v = parse_ok(R"(ext; a="10"; b="x\yz"; c="\1\5")");
    BOOST_TEST_REQUIRE(v.size() == 1u);
    std::vector<extension_param> want{p("a", "10"), p("b", "xyz"), p("c", "15")};
    BOOST_TEST((v[0].params == want));
}

BOOST_AUTO_TEST_CASE(quoted_value_may_hold_separators_only_if_escaped_into_a_token) {
    // Unescaped, these are not tokens: RFC 6455 §9.1 forbids them.
    BOOST_TEST(fails(R"(ext; a="1 0")"));
    BOOST_TEST(fails(R"(ext; a="x,y")"));
    BOOST_TEST(fails(R"(ext; a="x;y")"));
    BOOST_TEST(fails(R"(ext; a="\"")"));
    BOOST_TEST(fails(R"(ext; a="\\")"));
    BOOST_TEST(fails(R"(ext; a="")"));
    BOOST_TEST(fails("ext; a=\"\xc3\xa9\"")); // obs-text is quoted-string but not token
}

BOOST_AUTO_TEST_CASE(case_is_preserved) {
    auto v = parse_ok("PerMessage-Deflate; Client_Max_Window_Bits=AbC");
    BOOST_TEST_REQUIRE(v.size() == 1u);
    BOOST_TEST(v[0].name == "PerMessage-Deflate");
    BOOST_TEST((v[0].params[0] == p("Client_Max_Window_Bits", "AbC")));
}

BOOST_AUTO_TEST_CASE(every_tchar_is_accepted) {
    const std::string tchars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    auto v = parse_ok(tchars + "; " + tchars + "=" + tchars);
    BOOST_TEST_REQUIRE(v.size() == 1u);
    BOOST_TEST(v[0].name == tchars);
    BOOST_TEST((v[0].params[0] == p(tchars, tchars)));
}

BOOST_AUTO_TEST_CASE(every_non_tchar_byte_in_a_name_is_rejected) {
    const std::string tchars = "!#$%&'*+-.^_`|~";
    for (int c = 0; c < 256; ++c) {
        auto ch = static_cast<char>(c);
        bool is_tchar = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        tchars.find(ch) != std::string::npos;
        // Separators that the grammar allows at this position are excluded.
        if (is_tchar || ch == ' ' || ch == '\t' || ch == ',' || ch == ';' || ch == '=') continue;
        std::string h = "ab";
        h.insert(h.begin() + 1, ch);
        BOOST_TEST(fails(h), "byte " << c);
        BOOST_TEST(fails("x; " + h), "byte " << c << " in a parameter name");
        BOOST_TEST(fails("x; y=" + h), "byte " << c << " in a token value");
    }
}

BOOST_AUTO_TEST_CASE(empty_list_elements_are_skipped) {
    ext_list want{{"a", {}}, {"b", {p("x")}}};
    BOOST_TEST((parse_ok("a, , b; x") == want));
    BOOST_TEST((parse_ok(",a,,b;x,") == want));
    BOOST_TEST((parse_ok(" , a ,\t, b ; x , ") == want));
}

BOOST_AUTO_TEST_CASE(malformed_headers_fail) {
    for (std::string_view h : {
             "",                       // 1#extension needs one
             "   ",
             ",",
             " , ,\t",
             ";",                      // no extension name
             "; x",
             "a;",                     // parameter name missing
             "a; ",
             "a;;x",
             "a; =1",
             "a; x=",                  // value missing
             "a; x= ",
             "a; x=;",
             "a; x=1=2",
             "a; x==1",
             "a b",                    // two tokens without a separator
             "a; x y",
             "a; x=1 2",
             "a; x=\"1\"2",
             "a; x=\"1",               // unterminated quoted-string
             "a; x=\"1\\",
             "a; x=\"1\\\"",
             "a=1",                    // extension with a value
             "\"a\"",                  // quoted extension name
             "a; \"x\"=1",             // quoted parameter name
             "a; x=(1)",
             "a; x=1/2",
             "a; x=[1]",
             "a; x={1}",
             "a; x=1:2",
             "a; x=1@2",
             "a; x=1?2",
             "a\r\n; x",               // CR LF is not OWS
             "a;\nx",
             "a, b c",
             "a; x=\"\x01\"",          // control character in quoted-string
             "a; x=\"\\\x01\"",        // and in a quoted-pair
             "a; x=\"\x7f\"",
         }) {
        BOOST_TEST(fails(h), "header: \"" << h << "\"");
    }
}

BOOST_AUTO_TEST_CASE(nul_byte_fails) {
    using namespace std::string_view_literals;
    BOOST_TEST(fails("a\0b"sv));
    BOOST_TEST(fails("a; x=\"\0\""sv));
}

BOOST_AUTO_TEST_CASE(format_round_trips) {
    ext_list v = parse_ok(
        " permessage-deflate ;client_max_window_bits = \"10\";server_no_context_takeover ,foo,bar;x ");
    std::string text = corows::format_extensions(v);
    BOOST_TEST(text == "permessage-deflate; client_max_window_bits=10; server_no_context_takeover, foo, bar; x");
    BOOST_TEST((parse_ok(text) == v));
    BOOST_TEST(corows::format_extension(v[1]) == "foo");
    BOOST_TEST(corows::format_extensions({}) == "");
}

BOOST_AUTO_TEST_SUITE_END()
