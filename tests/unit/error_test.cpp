// SPDX-License-Identifier: BSL-1.0
#include <corows/error.hpp>

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(codes_have_category_and_message) {
    std::error_code ec = corows::error::invalid_utf8;
    BOOST_TEST(ec.category().name() == std::string("corows"));
    BOOST_TEST(ec.message() == "invalid UTF-8");
    BOOST_TEST(static_cast<bool>(ec));
    std::error_code other = corows::error::closed;
    BOOST_TEST(ec != other);
}

BOOST_AUTO_TEST_CASE(every_code_has_its_own_message) {
    std::set<std::string> seen;
    for (int v = static_cast<int>(corows::error::reserved_opcode);
         v <= static_cast<int>(corows::error::send_timeout); ++v) {
        auto msg = corows::make_error_code(static_cast<corows::error>(v)).message();
        BOOST_TEST(msg != "unknown corows error");
        BOOST_TEST(seen.insert(msg).second, "duplicate message: " << msg);
    }
}

// The Redis enumerators are deprecated; their values must not change while they remain.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
BOOST_AUTO_TEST_CASE(appended_codes_keep_the_old_values) {
    BOOST_TEST(static_cast<int>(corows::error::operation_in_progress) == 35);
    BOOST_TEST(static_cast<int>(corows::error::http_version_not_supported) == 36);
    BOOST_TEST(static_cast<int>(corows::error::handshake_closed) == 42);
    BOOST_TEST(static_cast<int>(corows::error::tls_answer) == 44);
    BOOST_TEST(static_cast<int>(corows::error::backplane_error) == 45);
    BOOST_TEST(static_cast<int>(corows::error::redis_protocol_error) == 47);
    BOOST_TEST(static_cast<int>(corows::error::proxy_refused) == 48);
    BOOST_TEST(static_cast<int>(corows::error::proxy_protocol_error) == 50);
    BOOST_TEST(static_cast<int>(corows::error::send_timeout) == 51);
    BOOST_TEST(corows::make_error_code(corows::error::upgrade_with_body).message() ==
               "upgrade request with a body");
}
#pragma GCC diagnostic pop

BOOST_AUTO_TEST_CASE(close_codes_for_errors) {
    using corows::close_code;
    BOOST_TEST((corows::close_code_for(corows::error::invalid_utf8) == close_code::invalid_payload));
    BOOST_TEST((corows::close_code_for(corows::error::message_too_big) == close_code::message_too_big));
    BOOST_TEST((corows::close_code_for(corows::error::send_timeout) == close_code::policy_violation));
    BOOST_TEST((corows::close_code_for(corows::error::frame_too_big) == close_code::message_too_big));
    BOOST_TEST((corows::close_code_for(corows::error::reserved_opcode) == close_code::protocol_error));
    BOOST_TEST((corows::close_code_for(corows::error::inflate_failed) == close_code::protocol_error));
    BOOST_TEST((corows::close_code_for(std::make_error_code(std::errc::io_error)) == close_code::internal_error));
}

BOOST_AUTO_TEST_CASE(every_protocol_error_but_utf8_closes_with_1002) {
    for (int v = static_cast<int>(corows::error::reserved_opcode); v <= static_cast<int>(corows::error::send_timeout); ++v) {
        auto ec = corows::make_error_code(static_cast<corows::error>(v));
        if (ec == corows::error::invalid_utf8) continue;
        bool violation = ec == corows::condition::protocol_error;
        BOOST_TEST((corows::close_code_for(ec) == corows::close_code::protocol_error) == violation, ec.message());
    }
}

BOOST_AUTO_TEST_CASE(sendable_close_codes) {
    for (int c : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999})
        BOOST_TEST(corows::is_sendable_close_code(static_cast<std::uint16_t>(c)), c);
    for (int c : {0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535})
        BOOST_TEST(!corows::is_sendable_close_code(static_cast<std::uint16_t>(c)), c);
}

// A close may be asked for without a code (0: an empty close frame), never with one that
// may not be sent.
BOOST_AUTO_TEST_CASE(a_close_may_start_with_no_code_or_a_sendable_one) {
    for (int c : {0, 1000, 1001, 1011, 3000, 4999})
        BOOST_TEST(corows::may_close_with(static_cast<std::uint16_t>(c)), c);
    for (int c : {1, 999, 1005, 1006, 1015, 5000})
        BOOST_TEST(!corows::may_close_with(static_cast<std::uint16_t>(c)), c);
}

BOOST_AUTO_TEST_CASE(rfc_section_names_what_a_violation_breaks) {
    using corows::error;
    BOOST_TEST(corows::rfc_section(error::mask_required) == "RFC 6455 §5.1");
    BOOST_TEST(corows::rfc_section(error::reserved_opcode) == "RFC 6455 §5.2");
    BOOST_TEST(corows::rfc_section(error::fragmented_control) == "RFC 6455 §5.4");
    BOOST_TEST(corows::rfc_section(error::invalid_utf8) == "RFC 6455 §8.1");
    BOOST_TEST(corows::rfc_section(error::bad_key) == "RFC 6455 §4.2.1");
    BOOST_TEST(corows::rfc_section(error::bad_compressed_frame) == "RFC 7692 §6");
    BOOST_TEST(corows::rfc_section(error::conflicting_length) == "RFC 9112 §6.3");
    // Our limits, timeouts and endings break no RFC; nor does another category's code.
    BOOST_TEST(corows::rfc_section(error::message_too_big).empty());
    BOOST_TEST(corows::rfc_section(error::timeout).empty());
    BOOST_TEST(corows::rfc_section(error::closed).empty());
    BOOST_TEST(corows::rfc_section(std::make_error_code(std::errc::connection_reset)).empty());
}

BOOST_AUTO_TEST_SUITE_END()
