// SPDX-License-Identifier: BSL-1.0
// tls13_records, and tls_engine reading and writing through it (the state a server's
// connection is in after release_openssl()): two ends keyed from the same secrets, bytes split
// at every point, tampering, key updates and alerts. Interop with OpenSSL itself is in
// tests/integration/tls_stream_test.cpp.
#include <corows/detail/tls13_records.hpp>
#include <corows/detail/tls_engine.hpp>

#include <boost/test/unit_test.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using records_t = corows::detail::tls13_records;
using corows::detail::tls13_secret;
using corows::detail::tls13_suite;
using corows::detail::tls_content;
using corows::detail::tls_engine;
using corows::detail::tls_status;
using status = corows::detail::tls13_opened::status;

tls13_secret secret(std::uint8_t fill, std::size_t size) {
    tls13_secret s;
    s.size = size;
    for (std::size_t i = 0; i < size; ++i) s.bytes[i] = static_cast<std::uint8_t>(fill + i);
    return s;
}

std::vector<std::uint8_t> bytes_from_hex(std::string_view hex) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i + 1 < hex.size();) {
        if (hex[i] == ' ') {
            ++i;
            continue;
        }
        out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
        i += 2;
    }
    return out;
}

tls13_secret secret_from_hex(std::string_view hex) {
    const std::vector<std::uint8_t> b = bytes_from_hex(hex);
    tls13_secret s;
    std::copy(b.begin(), b.end(), s.bytes.begin());
    s.size = b.size();
    return s;
}

std::size_t hash_size(tls13_suite s) { return s == tls13_suite::aes_256_gcm_sha384 ? 48 : 32; }

/// The two ends of one connection: `a` sends with what `b` receives with, and back.
struct ends {
    std::unique_ptr<records_t> a, b;
    explicit ends(tls13_suite s = tls13_suite::aes_256_gcm_sha384) {
        a = records_t::make(s, secret(1, hash_size(s)), secret(100, hash_size(s)), 0, 0);
        b = records_t::make(s, secret(100, hash_size(s)), secret(1, hash_size(s)), 0, 0);
        BOOST_REQUIRE(a && b);
    }
};

std::vector<std::uint8_t> noise(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& x : v) x = static_cast<std::uint8_t>(rng());
    return v;
}

std::span<const std::uint8_t> as_span(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::vector<std::uint8_t> seal(records_t& r, std::span<const std::uint8_t> data,
                               tls_content type = tls_content::application_data) {
    std::vector<std::uint8_t> out;
    BOOST_REQUIRE(r.seal(data, type, out));
    return out;
}

std::vector<std::uint8_t> seal(records_t& r, std::string_view s, tls_content type = tls_content::application_data) {
    return seal(r, {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}, type);
}

/// Opens every record of `wire` with `r`; the content of each, in order.
std::vector<std::vector<std::uint8_t>> open_all(records_t& r, std::span<const std::uint8_t> wire) {
    std::vector<std::vector<std::uint8_t>> contents;
    std::vector<std::uint8_t> out(records_t::max_plaintext + 1);
    while (!wire.empty()) {
        auto o = r.open(wire, out);
        BOOST_REQUIRE(o.st == status::record);
        contents.emplace_back(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(o.plaintext));
        wire = wire.subspan(o.consumed);
    }
    return contents;
}

int reason_of(const tls_engine& e) { return ERR_GET_REASON(e.error()); }

/// Everything `e` decrypts from `wire`, lent `piece` bytes at a time and read into `room`
/// bytes at a time, until it needs more than `wire` or stops.
std::pair<std::string, tls_status> drain(tls_engine& e, std::span<const std::uint8_t> wire, std::size_t piece,
                                         std::size_t room) {
    std::string got;
    std::vector<std::uint8_t> buf(room);
    tls_status st = tls_status::need_input;
    std::size_t at = 0;
    for (;;) {
        std::size_t n = 0;
        st = e.read(buf, n);
        if (st == tls_status::done) {
            got.append(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
            continue;
        }
        if (st != tls_status::need_input || at == wire.size()) break;
        const std::size_t k = std::min(piece, wire.size() - at);
        e.lend(wire.subspan(at, k));
        at += k;
        e.settle();
    }
    return {got, st};
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls13_records)

BOOST_AUTO_TEST_CASE(rfc8448_application_records_byte_for_byte) {
    // RFC 8448 section 3 (simple 1-RTT handshake, TLS_AES_128_GCM_SHA256): the two application
    // traffic secrets, the client's first application_data record and its close_notify, and
    // the server's application_data record (its second record: the NewSessionTicket was the
    // first). Both carry the 50 bytes 00 01 ... 31.
    const tls13_secret client_secret = secret_from_hex(
        "9e 40 64 6c e7 9a 7f 9d c0 5a f8 88 9b ce 65 52 87 5a fa 0b 06 df 00 87 f7 92 eb b7 c1 75 04 a5");
    const tls13_secret server_secret = secret_from_hex(
        "a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43");
    const auto client_record = bytes_from_hex(
        "17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef ac ea 42 f9 14 aa 66 bc ab 3f 2b "
        "98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b 62 97 4e 1f 5a 62 92 a2 97 70 14 bd 1e 3d ea e6 3a ee "
        "bb 21 69 49 15 e4");
    const auto client_close_notify =
        bytes_from_hex("17 03 03 00 13 c9 87 27 60 65 56 66 b7 4d 7f f1 15 3e fd 6d b6 d0 b0 e3");
    const auto server_record = bytes_from_hex(
        "17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4 a4 69 32 fc 32 25 d0 5f 82 aa 1b 36 e3 "
        "0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8 fc c4 9c 4b f2 e5 f0 a2 1c 00 47 c2 ab f3 32 54 0d d0 "
        "32 e1 67 c2 95 5d");
    std::vector<std::uint8_t> payload(50);
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i);

    // The server: reads with the client's secret from record 0, writes with its own from 1.
    auto server = records_t::make(tls13_suite::aes_128_gcm_sha256, client_secret, server_secret, 0, 1);
    BOOST_REQUIRE(server);
    std::vector<std::uint8_t> plain(records_t::max_plaintext + 1);
    corows::detail::tls13_opened r = server->open(client_record, plain);
    BOOST_REQUIRE((r.st == status::record));
    BOOST_TEST(r.consumed == client_record.size());
    BOOST_TEST((r.type == tls_content::application_data));
    BOOST_TEST(std::vector<std::uint8_t>(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(r.plaintext)) ==
               payload);
    BOOST_TEST(seal(*server, payload) == server_record);
    r = server->open(client_close_notify, plain);
    BOOST_REQUIRE((r.st == status::record));
    BOOST_TEST((r.type == tls_content::alert));
    BOOST_TEST(r.plaintext == 2u);
    BOOST_TEST(plain[0] == 1); // warning
    BOOST_TEST(plain[1] == 0); // close_notify

    // The client's side writes the very bytes the RFC shows.
    auto client = records_t::make(tls13_suite::aes_128_gcm_sha256, server_secret, client_secret, 1, 0);
    BOOST_REQUIRE(client);
    BOOST_TEST(seal(*client, payload) == client_record);
    const std::uint8_t close_notify[] = {1, 0};
    BOOST_TEST(seal(*client, close_notify, tls_content::alert) == client_close_notify);
    BOOST_TEST((client->open(server_record, plain).st == status::record));
}

BOOST_AUTO_TEST_CASE(every_suite_round_trips_records_of_every_boundary_size) {
    for (auto s : {tls13_suite::aes_128_gcm_sha256, tls13_suite::aes_256_gcm_sha384,
                   tls13_suite::chacha20_poly1305_sha256}) {
        ends e(s);
        for (std::size_t n : {0, 1, 16383, 16384, 16385, 100000}) {
            BOOST_TEST_CONTEXT("suite " << int(s) << ", " << n << " bytes") {
                auto data = noise(n, static_cast<std::uint32_t>(n));
                auto wire = seal(*e.a, data);
                // RFC 8446 §5.2: 23 3 3, the length of content + type byte + 16-byte tag.
                const std::size_t records = n == 0 ? 1 : (n + 16383) / 16384;
                BOOST_TEST(wire.size() == n + records * records_t::overhead);
                BOOST_TEST(wire[0] == 23);
                BOOST_TEST(wire[1] == 3);
                BOOST_TEST(wire[2] == 3);
                BOOST_TEST((wire[3] << 8 | wire[4]) == std::min<std::size_t>(n, 16384) + 17);
                std::vector<std::uint8_t> joined;
                for (auto& c : open_all(*e.b, wire)) joined.insert(joined.end(), c.begin(), c.end());
                BOOST_TEST((joined == data));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_change_to_any_byte_of_a_record_is_refused) {
    for (auto s : {tls13_suite::aes_128_gcm_sha256, tls13_suite::aes_256_gcm_sha384,
                   tls13_suite::chacha20_poly1305_sha256}) {
        // The second record too: each record's nonce and tag are set afresh.
        ends e(s);
        const std::vector<std::vector<std::uint8_t>> wires{seal(*e.a, "the quick brown fox"),
                                                           seal(*e.a, "jumps over the lazy dog")};
        std::vector<std::uint8_t> out(records_t::max_plaintext + 1);
        for (std::size_t r = 0; r < wires.size(); ++r) {
            for (std::size_t i = 0; i < wires[r].size(); ++i) {
                BOOST_TEST_CONTEXT("suite " << int(s) << ", record " << r << ", byte " << i) {
                    auto reader = records_t::make(s, secret(100, hash_size(s)), secret(1, hash_size(s)), 0, 0);
                    if (r == 1) BOOST_REQUIRE((reader->open(wires[0], out).st == status::record));
                    auto bad = wires[r];
                    bad[i] ^= 0x40;
                    auto o = reader->open(bad, out);
                    // A changed length asks for bytes that never come, or cuts the tag: never a record.
                    BOOST_TEST((o.st != status::record));
                    if (i != 3 && i != 4) BOOST_TEST((o.st == status::failed));
                    // Refused, the record is still refused whole, and the good one still opens.
                    if (o.st == status::failed) BOOST_TEST((reader->open(wires[r], out).st == status::record));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(records_open_only_in_sequence_and_under_the_current_key) {
    ends e;
    auto first = seal(*e.a, "one");
    auto second = seal(*e.a, "two");
    std::vector<std::uint8_t> out(records_t::max_plaintext + 1);
    BOOST_TEST((e.b->open(second, out).st == status::failed)); // skipped one
    ends f;
    (void)seal(*f.a, "one");
    BOOST_REQUIRE(f.a->update_write_key());
    auto rekeyed = seal(*f.a, "two");
    auto g = records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 1, 0);
    BOOST_TEST((g->open(rekeyed, out).st == status::failed)); // old key
    BOOST_REQUIRE(g->update_read_key());
    auto o = g->open(rekeyed, out);
    BOOST_REQUIRE((o.st == status::record));
    BOOST_TEST(std::string(out.begin(), out.begin() + 3) == "two");
}

BOOST_AUTO_TEST_CASE(the_engine_reads_records_split_at_every_byte_into_any_room) {
    ends e;
    std::vector<std::uint8_t> wire;
    std::string sent;
    for (std::size_t n : {5, 0, 300, 16384, 17}) {
        auto d = noise(n, static_cast<std::uint32_t>(n));
        sent.append(d.begin(), d.end());
        auto r = seal(*e.a, d);
        wire.insert(wire.end(), r.begin(), r.end());
    }
    auto close = seal(*e.a, std::string_view("\x01\x00", 2), tls_content::alert);
    wire.insert(wire.end(), close.begin(), close.end());
    for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{6}, std::size_t{4096},
                              wire.size()}) {
        for (std::size_t room : {std::size_t{1}, std::size_t{7}, std::size_t{16385}, std::size_t{65536}}) {
            BOOST_TEST_CONTEXT("pieces of " << piece << ", room " << room) {
                tls_engine eng(records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 0, 0));
                auto [got, st] = drain(eng, wire, piece, room);
                BOOST_TEST(got.size() == sent.size());
                BOOST_TEST((got == sent));
                BOOST_TEST((st == tls_status::closed));
                BOOST_TEST(eng.held_bytes() == 0u);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_partial_record_is_not_buffered_input) {
    ends e;
    auto wire = seal(*e.a, "hello");
    tls_engine eng(records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 0, 0));
    std::vector<std::uint8_t> buf(64);
    std::size_t n = 0;
    eng.lend(std::span(wire).first(wire.size() - 1));
    BOOST_TEST((eng.read(buf, n) == tls_status::need_input));
    eng.settle();
    // A waiter woken for this would spin: it must wait for the socket instead.
    BOOST_TEST(!eng.has_buffered_input());
    eng.lend(std::span(wire).last(1));
    eng.settle();
    BOOST_TEST(eng.has_buffered_input());
    BOOST_TEST((eng.read(buf, n) == tls_status::done));
    BOOST_TEST(std::string(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n)) == "hello");
}

BOOST_AUTO_TEST_CASE(record_size_reads_the_header_alone) {
    ends e;
    const auto wire = seal(*e.a, "hello");
    // 5 bytes of header, then "hello", its content type and a 16-byte tag.
    BOOST_TEST(records_t::record_size(wire) == 5u + 5u + 1u + 16u);
    BOOST_TEST(records_t::record_size(std::span(wire).first(5)) == wire.size());
    BOOST_TEST(records_t::record_size(std::span(wire).first(4)) == 0u);
    const std::uint8_t largest[] = {23, 3, 3, 0xFF, 0xFF};
    BOOST_TEST(records_t::record_size(largest) == 5u + 0xFFFFu);
}

BOOST_AUTO_TEST_CASE(a_requested_key_update_is_answered_once_before_the_next_record) {
    ends e;
    std::vector<std::uint8_t> wire;
    for (int i = 0; i < 3; ++i) {
        auto ku = seal(*e.a, std::string_view("\x18\x00\x00\x01\x01", 5), tls_content::handshake);
        BOOST_REQUIRE(e.a->update_write_key());
        wire.insert(wire.end(), ku.begin(), ku.end());
    }
    auto data = seal(*e.a, "after");
    wire.insert(wire.end(), data.begin(), data.end());
    tls_engine eng(records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 0, 0));
    auto [got, st] = drain(eng, wire, wire.size(), 64);
    BOOST_TEST(got == "after");
    const std::string reply = "reply";
    BOOST_REQUIRE((eng.write({reinterpret_cast<const std::uint8_t*>(reply.data()), reply.size()}) == tls_status::done));
    auto out = eng.take_output();
    std::vector<std::uint8_t> room(records_t::max_plaintext + 1);
    auto first = e.a->open(out, room);
    BOOST_REQUIRE((first.st == status::record));
    BOOST_TEST((first.type == tls_content::handshake));
    BOOST_TEST((std::vector<std::uint8_t>(room.begin(), room.begin() + 5) == std::vector<std::uint8_t>{24, 0, 0, 1, 0}));
    BOOST_REQUIRE(e.a->update_read_key());
    auto second = e.a->open(std::span(out).subspan(first.consumed), room);
    BOOST_REQUIRE((second.st == status::record));
    BOOST_TEST(std::string(room.begin(), room.begin() + 5) == "reply");
    BOOST_TEST(first.consumed + second.consumed == out.size()); // one KeyUpdate for three requests
}

/// A NewSessionTicket handshake message (RFC 8446 §4.6.1) with a `body` bytes long body.
std::vector<std::uint8_t> ticket(std::size_t body) {
    std::vector<std::uint8_t> m{4, static_cast<std::uint8_t>(body >> 16), static_cast<std::uint8_t>(body >> 8),
                                static_cast<std::uint8_t>(body)};
    for (std::size_t i = 0; i < body; ++i) m.push_back(static_cast<std::uint8_t>(i));
    return m;
}

/// An engine on `client`'s side that reads what e.a writes.
std::unique_ptr<tls_engine> reader_of(bool client) {
    return std::make_unique<tls_engine>(
        records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 0, 0), client);
}

BOOST_AUTO_TEST_CASE(a_client_skips_session_tickets_that_share_a_record_or_span_records) {
    ends e;
    std::vector<std::uint8_t> wire;
    const auto add = [&](std::span<const std::uint8_t> content, tls_content type) {
        auto r = seal(*e.a, content, type);
        wire.insert(wire.end(), r.begin(), r.end());
    };
    auto two = ticket(40);
    auto second = ticket(7);
    two.insert(two.end(), second.begin(), second.end());
    add(two, tls_content::handshake);
    const auto long_one = ticket(300);
    const auto third = std::span(long_one).first(100);
    const auto rest = std::span(long_one).subspan(100);
    add(third, tls_content::handshake);
    add(rest.first(150), tls_content::handshake);
    add(rest.subspan(150), tls_content::handshake);
    add(as_span("after"), tls_content::application_data);
    for (std::size_t piece : {std::size_t{1}, std::size_t{7}, wire.size()}) {
        BOOST_TEST_CONTEXT("lent " << piece << " bytes at a time") {
            auto client = reader_of(true);
            auto [got, st] = drain(*client, wire, piece, 64);
            BOOST_TEST(got == "after");
            BOOST_TEST((st == tls_status::need_input));
        }
    }
    // A server takes no ticket from its client.
    auto server = reader_of(false);
    auto [got, st] = drain(*server, wire, wire.size(), 64);
    BOOST_TEST(got.empty());
    BOOST_TEST((st == tls_status::failed));
    BOOST_TEST(reason_of(*server) == SSL_R_UNEXPECTED_MESSAGE);
}

BOOST_AUTO_TEST_CASE(handshake_headers_cut_across_records_and_a_key_update_after_a_ticket_are_read) {
    ends e;
    std::vector<std::uint8_t> wire;
    const auto add = [&](std::span<const std::uint8_t> content, tls_content type) {
        auto r = seal(*e.a, content, type);
        wire.insert(wire.end(), r.begin(), r.end());
    };
    auto two = ticket(20);
    const auto second = ticket(9);
    two.insert(two.end(), second.begin(), second.end());
    // The second ticket's header in three records: 1 byte, 2 bytes, then the last and its body.
    add(std::span(two).first(25), tls_content::handshake);
    add(std::span(two).subspan(25, 2), tls_content::handshake);
    add(std::span(two).subspan(27), tls_content::handshake);
    auto with_update = ticket(5);
    const std::uint8_t key_update[] = {24, 0, 0, 1, 1};
    with_update.insert(with_update.end(), std::begin(key_update), std::end(key_update));
    add(with_update, tls_content::handshake);
    BOOST_REQUIRE(e.a->update_write_key());
    add(as_span("after"), tls_content::application_data);
    for (std::size_t piece : {std::size_t{1}, wire.size()}) {
        BOOST_TEST_CONTEXT("lent " << piece << " bytes at a time") {
            auto client = reader_of(true);
            auto [got, st] = drain(*client, wire, piece, 64);
            BOOST_TEST(got == "after");
            BOOST_TEST((st == tls_status::need_input));
        }
    }
}

BOOST_AUTO_TEST_CASE(a_key_update_that_does_not_end_its_record_is_an_unexpected_message) {
    ends e;
    auto wire = seal(*e.a, std::string_view("\x18\x00\x00\x01\x00\x04", 6), tls_content::handshake);
    auto client = reader_of(true);
    auto [got, st] = drain(*client, wire, wire.size(), 64);
    BOOST_TEST((st == tls_status::failed));
    BOOST_TEST(reason_of(*client) == SSL_R_NOT_ON_RECORD_BOUNDARY);
    auto alerts = open_all(*e.a, client->take_output());
    BOOST_REQUIRE(alerts.size() == 1u);
    BOOST_TEST((alerts[0] == std::vector<std::uint8_t>{2, SSL_AD_UNEXPECTED_MESSAGE}));
}

BOOST_AUTO_TEST_CASE(a_record_of_another_type_inside_a_ticket_and_an_empty_handshake_record_are_refused) {
    {
        ends e;
        const auto partial = ticket(100);
        auto head = seal(*e.a, std::span(partial).first(30), tls_content::handshake);
        auto data = seal(*e.a, as_span("data"), tls_content::application_data);
        head.insert(head.end(), data.begin(), data.end());
        auto client = reader_of(true);
        auto [got, st] = drain(*client, head, head.size(), 64);
        BOOST_TEST(got.empty());
        BOOST_TEST((st == tls_status::failed));
        BOOST_TEST(reason_of(*client) == SSL_R_UNEXPECTED_RECORD);
    }
    for (bool client_side : {true, false}) {
        ends e;
        auto empty = seal(*e.a, std::span<const std::uint8_t>(), tls_content::handshake);
        auto eng = reader_of(client_side);
        auto [got, st] = drain(*eng, empty, empty.size(), 64);
        BOOST_TEST((st == tls_status::failed));
        BOOST_TEST(reason_of(*eng) == SSL_R_BAD_HANDSHAKE_LENGTH);
    }
}

BOOST_AUTO_TEST_CASE(a_failed_record_queues_its_alert_and_nothing_is_written_after_it) {
    ends e;
    auto wire = seal(*e.a, "hello");
    wire[10] ^= 1;
    tls_engine eng(records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 0, 0));
    auto [got, st] = drain(eng, wire, wire.size(), 64);
    BOOST_TEST((st == tls_status::failed));
    BOOST_TEST(reason_of(eng) == SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC);
    auto out = eng.take_output();
    auto alerts = open_all(*e.a, out);
    BOOST_REQUIRE(alerts.size() == 1u);
    BOOST_TEST((alerts[0] == std::vector<std::uint8_t>{2, SSL_AD_BAD_RECORD_MAC}));
    const std::uint8_t byte = 1;
    BOOST_TEST((eng.write({&byte, 1}) == tls_status::failed));
    BOOST_TEST(reason_of(eng) == SSL_R_PROTOCOL_IS_SHUTDOWN);
}

BOOST_AUTO_TEST_CASE(a_fragment_limit_cuts_every_record_to_it) {
    ends e;
    e.a->limit_fragment(512);
    const auto data = noise(3000, 5);
    auto wire = seal(*e.a, data);
    auto contents = open_all(*e.b, wire);
    BOOST_TEST(contents.size() == 6u);
    std::vector<std::uint8_t> joined;
    for (const auto& c : contents) {
        BOOST_TEST(c.size() <= 512u);
        joined.insert(joined.end(), c.begin(), c.end());
    }
    BOOST_TEST((joined == data));
    e.a->limit_fragment(1 << 20); // no more than TLS allows
    BOOST_TEST(e.a->fragment_limit() == records_t::max_plaintext);
}

BOOST_AUTO_TEST_CASE(shutdown_sends_one_close_notify) {
    ends e;
    tls_engine eng(records_t::make(tls13_suite::aes_256_gcm_sha384, secret(100, 48), secret(1, 48), 0, 0));
    BOOST_TEST((eng.shutdown() == tls_status::done));
    BOOST_TEST((eng.shutdown() == tls_status::done));
    auto alerts = open_all(*e.a, eng.take_output());
    BOOST_REQUIRE(alerts.size() == 1u);
    BOOST_TEST((alerts[0] == std::vector<std::uint8_t>{1, 0}));
}

BOOST_AUTO_TEST_SUITE_END()
