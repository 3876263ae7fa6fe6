// SPDX-License-Identifier: BSL-1.0
#include <corows/condition.hpp>
#include <corows/detail/platform.hpp>
#include <corows/error.hpp>
#include <corows/protocol/proxy.hpp>
#include <corows/protocol/url.hpp>
#include <corows/redis_error.hpp>

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <map>
#include <optional>
#include <string>

// The corows::error enumerators kept for one release are looked up here on purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

using cond = corows::condition;
using expectations = std::map<int, std::optional<cond>>;

constexpr cond all_conditions[] = {
    cond::closed,   cond::connection_lost,  cond::timeout,           cond::protocol_error,
    cond::too_big,  cond::handshake_failed, cond::handshake_refused, cond::tls,
    cond::bad_url,  cond::proxy,            cond::redis,
};

// Every value of `cat` with a message of its own (1 up to the first without: a code appended
// to an enum gets a message, so it is checked here and fails until the table names it) must
// be in `table`, and match its condition and no other.
void check_category(const std::error_category& cat, const expectations& table, const std::string& unknown) {
    int checked = 0;
    for (int v = 1; cat.message(v) != unknown; ++v, ++checked) {
        std::error_code ec(v, cat);
        auto it = table.find(v);
        BOOST_TEST_REQUIRE((it != table.end()), cat.name() << " code " << v << " (" << ec.message()
                                                             << ") has no expected condition in this table");
        for (cond c : all_conditions) {
            bool expected = it->second == c;
            BOOST_TEST((ec == c) == expected, cat.name() << " code " << v << " (" << ec.message() << ") vs "
                                                          << corows::make_error_condition(c).message());
        }
    }
    BOOST_TEST(checked == static_cast<int>(table.size()), cat.name() << ": the table names codes the category lacks");
}

} // namespace

BOOST_AUTO_TEST_SUITE(condition)

BOOST_AUTO_TEST_CASE(every_corows_error_has_its_condition) {
    using corows::error;
    auto e = [](error x) { return static_cast<int>(x); };
    const expectations table{
        {e(error::reserved_opcode), cond::protocol_error},
        {e(error::reserved_bits), cond::protocol_error},
        {e(error::fragmented_control), cond::protocol_error},
        {e(error::control_too_big), cond::protocol_error},
        {e(error::bad_length), cond::protocol_error},
        {e(error::mask_required), cond::protocol_error},
        {e(error::unexpected_mask), cond::protocol_error},
        {e(error::frame_too_big), cond::too_big},
        {e(error::bad_continuation), cond::protocol_error},
        {e(error::expected_continuation), cond::protocol_error},
        {e(error::message_too_big), cond::too_big},
        {e(error::invalid_utf8), cond::protocol_error},
        {e(error::bad_close_code), cond::protocol_error},
        {e(error::bad_close_payload), cond::protocol_error},
        {e(error::http_parse_error), cond::handshake_failed},
        {e(error::header_too_large), cond::too_big},
        {e(error::too_many_headers), cond::too_big},
        {e(error::bad_method), cond::handshake_failed},
        {e(error::bad_http_version), cond::handshake_failed},
        {e(error::missing_host), cond::handshake_failed},
        {e(error::bad_upgrade), cond::handshake_failed},
        {e(error::bad_connection), cond::handshake_failed},
        {e(error::bad_key), cond::handshake_failed},
        {e(error::bad_version), cond::handshake_failed},
        {e(error::bad_status), cond::handshake_refused},
        {e(error::bad_accept), cond::handshake_failed},
        {e(error::bad_subprotocol), cond::handshake_failed},
        {e(error::bad_extension), cond::handshake_failed},
        {e(error::inflate_failed), cond::protocol_error},
        {e(error::deflate_failed), std::nullopt},
        {e(error::bad_compressed_frame), cond::protocol_error},
        {e(error::closed), cond::closed},
        {e(error::timeout), cond::timeout},
        {e(error::handshake_failed), cond::handshake_refused},
        {e(error::operation_in_progress), std::nullopt},
        {e(error::http_version_not_supported), cond::handshake_failed},
        {e(error::bad_content_length), cond::handshake_failed},
        {e(error::conflicting_length), cond::handshake_failed},
        {e(error::upgrade_with_body), cond::handshake_failed},
        {e(error::body_too_large), cond::too_big},
        {e(error::length_required), cond::handshake_failed},
        {e(error::handshake_closed), cond::connection_lost},
        {e(error::bad_chunked_encoding), cond::handshake_failed},
        {e(error::tls_answer), cond::tls},
        {e(error::backplane_error), cond::redis},
        {e(error::redis_auth_failed), cond::redis},
        {e(error::redis_protocol_error), cond::redis},
        {e(error::proxy_refused), cond::proxy},
        {e(error::proxy_auth_failed), cond::proxy},
        {e(error::proxy_protocol_error), cond::proxy},
        {e(error::send_timeout), cond::timeout},
    };
    check_category(corows::error_category(), table, "unknown corows error");
}

BOOST_AUTO_TEST_CASE(every_redis_error_is_redis) {
    using corows::redis_error;
    const expectations table{
        {static_cast<int>(redis_error::server_error), cond::redis},
        {static_cast<int>(redis_error::auth_failed), cond::redis},
        {static_cast<int>(redis_error::protocol_error), cond::redis},
    };
    check_category(corows::redis_error_category(), table, "unknown Redis error");
}

BOOST_AUTO_TEST_CASE(every_url_error_is_bad_url) {
    using corows::url_error;
    expectations table;
    for (auto u : {url_error::bad_scheme, url_error::bad_host, url_error::bad_port, url_error::userinfo,
                   url_error::fragment, url_error::bad_target, url_error::bad_socket_path})
        table.emplace(static_cast<int>(u), cond::bad_url);
    check_category(corows::url_error_category(), table, "unknown URL error");
}

BOOST_AUTO_TEST_CASE(every_proxy_url_error_is_bad_url) {
    using corows::proxy_url_error;
    expectations table;
    for (auto u : {proxy_url_error::bad_scheme, proxy_url_error::bad_host, proxy_url_error::bad_port,
                   proxy_url_error::bad_userinfo, proxy_url_error::path})
        table.emplace(static_cast<int>(u), cond::bad_url);
    check_category(corows::proxy_url_error_category(), table, "unknown proxy URL error");
}

BOOST_AUTO_TEST_CASE(every_socks5_reply_is_proxy) {
    // Every reply code has a message (unassigned ones too), so the values are bounded here.
    for (int v = 1; v <= 255; ++v) {
        std::error_code ec(v, corows::socks5_category());
        for (cond c : all_conditions) BOOST_TEST((ec == c) == (c == cond::proxy), "reply " << v);
    }
}

BOOST_AUTO_TEST_CASE(system_and_asio_codes) {
    auto sys = [](std::errc e) { return std::make_error_code(e); };
    BOOST_TEST((sys(std::errc::timed_out) == cond::timeout));
    BOOST_TEST((sys(std::errc::connection_reset) == cond::connection_lost));
    BOOST_TEST((sys(std::errc::broken_pipe) == cond::connection_lost));
    BOOST_TEST((sys(std::errc::connection_aborted) == cond::connection_lost));
    BOOST_TEST((sys(std::errc::not_connected) == cond::connection_lost));
    // The OS's own codes: errno's values on POSIX, Winsock's on Windows.
    using corows::detail::socket_error;
    BOOST_TEST((socket_error(std::errc::connection_reset) == cond::connection_lost));
    BOOST_TEST((socket_error(std::errc::connection_aborted) == cond::connection_lost));
    BOOST_TEST((socket_error(std::errc::broken_pipe) == cond::connection_lost));
    BOOST_TEST((socket_error(std::errc::timed_out) == cond::timeout));
    BOOST_TEST(!(socket_error(std::errc::connection_refused) == cond::connection_lost));
    BOOST_TEST(!(sys(std::errc::operation_canceled) == cond::closed));
    BOOST_TEST(!(sys(std::errc::connection_refused) == cond::connection_lost));
    BOOST_TEST(!(std::error_code() == cond::closed));
}

BOOST_AUTO_TEST_CASE(messages_and_name) {
    BOOST_TEST(corows::condition_category().name() == std::string("corows.condition"));
    BOOST_TEST(corows::make_error_condition(cond::timeout).message() == "timed out");
    for (cond c : all_conditions)
        BOOST_TEST(corows::make_error_condition(c).message() != "unknown corows condition");
}

BOOST_AUTO_TEST_SUITE_END()
