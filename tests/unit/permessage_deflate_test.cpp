// SPDX-License-Identifier: BSL-1.0
#include <corows/error.hpp>
#include <corows/protocol/extension.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using corows::deflate_options;
using corows::deflate_params;
using ext_list = std::vector<corows::extension>;

ext_list parse(std::string_view header) {
    ext_list v;
    if (!header.empty()) {
        auto ec = corows::parse_extensions(header, v);
        BOOST_TEST_REQUIRE(!ec, "test header does not parse: " << header);
    }
    return v;
}

// The explicit settings the tables below describe: without the default's shared compressor,
// which adds server_no_context_takeover to every server answer (see shared_default_*).
deflate_options enabled() {
    deflate_options o;
    o.enabled = true;
    o.shared_compressor = false;
    return o;
}

deflate_params params(bool snct, bool cnct, int smwb, int cmwb) {
    deflate_params p;
    p.server_no_context_takeover = snct;
    p.client_no_context_takeover = cnct;
    p.server_max_window_bits = smwb;
    p.client_max_window_bits = cmwb;
    return p;
}

std::string describe(const std::optional<deflate_params>& p) {
    if (!p) return "declined";
    return "snct=" + std::to_string(p->server_no_context_takeover) +
           " cnct=" + std::to_string(p->client_no_context_takeover) +
           " smwb=" + std::to_string(p->server_max_window_bits) +
           " cmwb=" + std::to_string(p->client_max_window_bits);
}

struct server_case {
    const char* name;
    deflate_options config;
    std::string_view offers;
    std::string_view response; // "" = declined
    deflate_params agreed;
};

deflate_options server_config(bool snct, bool cnct, int smwb, int cmwb) {
    deflate_options o = enabled();
    o.server_no_context_takeover = snct;
    o.client_no_context_takeover = cnct;
    o.server_max_window_bits = smwb;
    o.client_max_window_bits = cmwb;
    return o;
}

const deflate_params plain = params(false, false, 15, 15);

std::vector<server_case> server_cases() {
    const deflate_options dflt = enabled();
    return {
        {"browser offer", dflt, "permessage-deflate; client_max_window_bits", "permessage-deflate", plain},
        {"bare offer", dflt, "permessage-deflate", "permessage-deflate", plain},
        {"client asks server_no_context_takeover", dflt,
         "permessage-deflate; server_no_context_takeover",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {"client hints client_no_context_takeover: echoed", dflt,
         "permessage-deflate; client_no_context_takeover",
         "permessage-deflate; client_no_context_takeover", params(false, true, 15, 15)},
        {"client asks server_max_window_bits=10", dflt, "permessage-deflate; server_max_window_bits=10",
         "permessage-deflate; server_max_window_bits=10", params(false, false, 10, 15)},
        {"server_max_window_bits=15 asked is answered", dflt,
         "permessage-deflate; server_max_window_bits=15",
         "permessage-deflate; server_max_window_bits=15", plain},
        {"client_max_window_bits=10 hint is echoed", dflt, "permessage-deflate; client_max_window_bits=10",
         "permessage-deflate; client_max_window_bits=10", params(false, false, 15, 10)},
        {"client_max_window_bits=15 needs no answer", dflt,
         "permessage-deflate; client_max_window_bits=15", "permessage-deflate", plain},
        {"quoted values", dflt,
         "permessage-deflate; server_max_window_bits=\"12\"; client_max_window_bits=\"11\"",
         "permessage-deflate; server_max_window_bits=12; client_max_window_bits=11",
         params(false, false, 12, 11)},
        {"names are case-insensitive", dflt, "PerMessage-Deflate; Server_Max_Window_Bits=9; CLIENT_NO_CONTEXT_TAKEOVER",
         "permessage-deflate; client_no_context_takeover; server_max_window_bits=9",
         params(false, true, 9, 15)},
        {"everything asked", dflt,
         "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
         "server_max_window_bits=11; client_max_window_bits=12",
         "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
         "server_max_window_bits=11; client_max_window_bits=12",
         params(true, true, 11, 12)},
        // window bits 8 is accepted both ways (our compressor stays within 256 bytes)
        {"server_max_window_bits=8", dflt, "permessage-deflate; server_max_window_bits=8",
         "permessage-deflate; server_max_window_bits=8", params(false, false, 8, 15)},
        {"client_max_window_bits=8", dflt, "permessage-deflate; client_max_window_bits=8",
         "permessage-deflate; client_max_window_bits=8", params(false, false, 15, 8)},
        // server configuration imposes itself
        {"server config server_no_context_takeover", server_config(true, false, 15, 15),
         "permessage-deflate; client_max_window_bits",
         "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {"server config client_no_context_takeover", server_config(false, true, 15, 15),
         "permessage-deflate; client_max_window_bits",
         "permessage-deflate; client_no_context_takeover", params(false, true, 15, 15)},
        {"server config server_max_window_bits=10, unasked", server_config(false, false, 10, 15),
         "permessage-deflate; client_max_window_bits",
         "permessage-deflate; server_max_window_bits=10", params(false, false, 10, 15)},
        {"server config 10 beats a request for 12", server_config(false, false, 10, 15),
         "permessage-deflate; server_max_window_bits=12",
         "permessage-deflate; server_max_window_bits=10", params(false, false, 10, 15)},
        {"a request for 9 beats server config 10", server_config(false, false, 10, 15),
         "permessage-deflate; server_max_window_bits=9",
         "permessage-deflate; server_max_window_bits=9", params(false, false, 9, 15)},
        {"server config client_max_window_bits=10", server_config(false, false, 15, 10),
         "permessage-deflate; client_max_window_bits",
         "permessage-deflate; client_max_window_bits=10", params(false, false, 15, 10)},
        {"client hint 9 beats server config 10", server_config(false, false, 15, 10),
         "permessage-deflate; client_max_window_bits=9",
         "permessage-deflate; client_max_window_bits=9", params(false, false, 15, 9)},
        {"server limits the client but the offer does not allow it", server_config(false, false, 15, 10),
         "permessage-deflate", "", {}},
        {"out-of-range configuration is clamped", server_config(false, false, 20, 3),
         "permessage-deflate; client_max_window_bits",
         "permessage-deflate; client_max_window_bits=8", params(false, false, 15, 8)},
        // several offers: the first acceptable one wins
        {"first offer invalid", dflt,
         "permessage-deflate; server_max_window_bits=16, permessage-deflate; client_max_window_bits",
         "permessage-deflate", plain},
        {"first offer unacceptable under server limits", server_config(false, false, 15, 10),
         "permessage-deflate; server_no_context_takeover, permessage-deflate; client_max_window_bits=12",
         "permessage-deflate; client_max_window_bits=10", params(false, false, 15, 10)},
        {"first acceptable offer wins over later ones", dflt,
         "permessage-deflate; server_max_window_bits=10, permessage-deflate",
         "permessage-deflate; server_max_window_bits=10", params(false, false, 10, 15)},
        {"other extensions are skipped", dflt,
         "x-webkit-deflate-frame, permessage-deflate; client_max_window_bits=13; foo, "
         "permessage-deflate; client_no_context_takeover",
         "permessage-deflate; client_no_context_takeover", params(false, true, 15, 15)},
        {"only other extensions", dflt, "x-webkit-deflate-frame, deflate-frame", "", {}},
    };
}

} // namespace

BOOST_AUTO_TEST_SUITE(permessage_deflate)

BOOST_AUTO_TEST_CASE(client_offers) {
    deflate_options o = enabled();
    BOOST_TEST(corows::deflate_offer(o) == "permessage-deflate; client_max_window_bits");
    o.server_no_context_takeover = true;
    BOOST_TEST(corows::deflate_offer(o) ==
               "permessage-deflate; server_no_context_takeover; client_max_window_bits");
    o = enabled();
    o.client_no_context_takeover = true;
    BOOST_TEST(corows::deflate_offer(o) ==
               "permessage-deflate; client_no_context_takeover; client_max_window_bits");
    o = enabled();
    o.server_max_window_bits = 10;
    BOOST_TEST(corows::deflate_offer(o) ==
               "permessage-deflate; server_max_window_bits=10; client_max_window_bits");
    o = enabled();
    o.client_max_window_bits = 9;
    BOOST_TEST(corows::deflate_offer(o) == "permessage-deflate; client_max_window_bits=9");
    o = enabled();
    o.server_no_context_takeover = o.client_no_context_takeover = true;
    o.server_max_window_bits = 8;
    o.client_max_window_bits = 8;
    BOOST_TEST(corows::deflate_offer(o) ==
               "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
               "server_max_window_bits=8; client_max_window_bits=8");
    // 15 is never asked for explicitly; out-of-range values are clamped
    o = enabled();
    o.server_max_window_bits = 20;
    o.client_max_window_bits = 2;
    BOOST_TEST(corows::deflate_offer(o) == "permessage-deflate; client_max_window_bits=8");
    o.enabled = false;
    BOOST_TEST(corows::deflate_offer(o) == "");
}

BOOST_AUTO_TEST_CASE(offer_parse) {
    auto ext = parse("permessage-deflate; client_max_window_bits; server_max_window_bits=10");
    auto o = corows::parse_deflate_offer(ext[0]);
    BOOST_TEST_REQUIRE(o.has_value());
    BOOST_TEST(!o->server_no_context_takeover);
    BOOST_TEST(!o->client_no_context_takeover);
    BOOST_TEST((o->server_max_window_bits == 10));
    BOOST_TEST((o->client_max_window_bits == 15));
    BOOST_TEST(!corows::parse_deflate_offer(parse("x-deflate")[0]).has_value());
    // format and parse are inverses
    corows::deflate_offer_params full{true, true, 9, 12};
    BOOST_TEST((corows::parse_deflate_offer(parse(corows::format_deflate_offer(full))[0]) == full));
    corows::deflate_offer_params none{};
    BOOST_TEST(corows::format_deflate_offer(none) == "permessage-deflate");
    BOOST_TEST((corows::parse_deflate_offer(parse("permessage-deflate")[0]) == none));
}

BOOST_AUTO_TEST_CASE(server_negotiation_table) {
    for (const auto& c : server_cases()) {
        std::string response = "stale";
        auto agreed = corows::negotiate_deflate(parse(c.offers), c.config, response);
        BOOST_TEST(response == c.response, c.name);
        if (c.response.empty()) {
            BOOST_TEST(!agreed.has_value(), c.name);
            continue;
        }
        BOOST_TEST_REQUIRE(agreed.has_value(), c.name);
        BOOST_TEST((*agreed == c.agreed), c.name << ": got " << describe(agreed));
    }
}

BOOST_AUTO_TEST_CASE(server_declines_invalid_offers) {
    for (std::string_view offer : {
             "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
             "permessage-deflate; client_no_context_takeover; client_no_context_takeover",
             "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10",
             "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
             "permessage-deflate; client_max_window_bits; Client_Max_Window_Bits",
             "permessage-deflate; server_max_window_bits",   // needs a value in an offer
             "permessage-deflate; server_max_window_bits=7",
             "permessage-deflate; server_max_window_bits=16",
             "permessage-deflate; server_max_window_bits=08",
             "permessage-deflate; server_max_window_bits=010",
             "permessage-deflate; server_max_window_bits=+9",
             "permessage-deflate; server_max_window_bits=0x9",
             "permessage-deflate; server_max_window_bits=9.0",
             "permessage-deflate; server_max_window_bits=-9",
             "permessage-deflate; server_max_window_bits=1",
             "permessage-deflate; server_max_window_bits=150",
             "permessage-deflate; server_max_window_bits=ten",
             "permessage-deflate; client_max_window_bits=7",
             "permessage-deflate; client_max_window_bits=16",
             "permessage-deflate; client_max_window_bits=09",
             "permessage-deflate; server_no_context_takeover=1",
             "permessage-deflate; client_no_context_takeover=true",
             "permessage-deflate; mux",
             "permessage-deflate; client_max_window_bits; x",
         }) {
        std::string response = "stale";
        auto agreed = corows::negotiate_deflate(parse(offer), enabled(), response);
        BOOST_TEST(!agreed.has_value(), offer);
        BOOST_TEST(response == "", offer);
        BOOST_TEST(!corows::parse_deflate_offer(parse(offer)[0]).has_value(), offer);
    }
}

BOOST_AUTO_TEST_CASE(server_disabled_declines) {
    std::string response = "stale";
    deflate_options off;
    BOOST_TEST(!corows::negotiate_deflate(parse("permessage-deflate"), off, response).has_value());
    BOOST_TEST(response == "");
    BOOST_TEST(!corows::negotiate_deflate({}, enabled(), response).has_value());
}

BOOST_AUTO_TEST_CASE(client_accepts_valid_responses) {
    struct row {
        deflate_options offered;
        std::string_view response;
        deflate_params agreed;
    };
    deflate_options dflt = enabled();
    deflate_options ask_snct = enabled();
    ask_snct.server_no_context_takeover = true;
    deflate_options ask_smwb10 = enabled();
    ask_smwb10.server_max_window_bits = 10;
    deflate_options promise_cnct = enabled();
    promise_cnct.client_no_context_takeover = true;
    deflate_options promise_cmwb10 = enabled();
    promise_cmwb10.client_max_window_bits = 10;
    std::vector<row> rows{
        {dflt, "permessage-deflate", plain},
        {dflt, "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {dflt, "permessage-deflate; client_no_context_takeover", params(false, true, 15, 15)},
        {dflt, "permessage-deflate; server_max_window_bits=10", params(false, false, 10, 15)},
        {dflt, "permessage-deflate; server_max_window_bits=8", params(false, false, 8, 15)},
        {dflt, "permessage-deflate; client_max_window_bits=10", params(false, false, 15, 10)},
        {dflt, "permessage-deflate; client_max_window_bits=8", params(false, false, 15, 8)},
        {dflt, "permessage-deflate; client_max_window_bits=\"9\"", params(false, false, 15, 9)},
        {dflt, "Permessage-Deflate; Server_No_Context_Takeover", params(true, false, 15, 15)},
        {ask_snct, "permessage-deflate; server_no_context_takeover", params(true, false, 15, 15)},
        {ask_smwb10, "permessage-deflate; server_max_window_bits=10", params(false, false, 10, 15)},
        {ask_smwb10, "permessage-deflate; server_max_window_bits=9", params(false, false, 9, 15)},
        {promise_cnct, "permessage-deflate", params(false, true, 15, 15)},
        {promise_cnct, "permessage-deflate; client_no_context_takeover", params(false, true, 15, 15)},
        {promise_cmwb10, "permessage-deflate", params(false, false, 15, 10)},
        {promise_cmwb10, "permessage-deflate; client_max_window_bits=12", params(false, false, 15, 10)},
        {promise_cmwb10, "permessage-deflate; client_max_window_bits=9", params(false, false, 15, 9)},
    };
    for (const auto& r : rows) {
        std::optional<deflate_params> out;
        auto ec = corows::accept_deflate_response(parse(r.response), r.offered, out);
        BOOST_TEST(!ec, r.response);
        BOOST_TEST_REQUIRE(out.has_value(), r.response);
        BOOST_TEST((*out == r.agreed), r.response << ": got " << describe(out));
    }
}

BOOST_AUTO_TEST_CASE(client_accepts_a_declined_offer) {
    std::optional<deflate_params> out = plain;
    BOOST_TEST(!corows::accept_deflate_response({}, enabled(), out));
    BOOST_TEST(!out.has_value());
    deflate_options off;
    out = plain;
    BOOST_TEST(!corows::accept_deflate_response({}, off, out));
    BOOST_TEST(!out.has_value());
}

BOOST_AUTO_TEST_CASE(client_rejects_invalid_responses) {
    struct row {
        deflate_options offered;
        std::string_view response;
    };
    deflate_options dflt = enabled();
    deflate_options off;
    deflate_options ask_snct = enabled();
    ask_snct.server_no_context_takeover = true;
    deflate_options ask_smwb10 = enabled();
    ask_smwb10.server_max_window_bits = 10;
    std::vector<row> rows{
        {off, "permessage-deflate"},                              // nothing was offered
        {dflt, "x-webkit-deflate-frame"},                         // not offered
        {dflt, "permessage-deflate, x-webkit-deflate-frame"},
        {dflt, "permessage-deflate, permessage-deflate"},         // accepted twice
        {dflt, "permessage-deflate; foo"},                        // unknown parameter
        {dflt, "permessage-deflate; server_no_context_takeover; server_no_context_takeover"},
        {dflt, "permessage-deflate; client_no_context_takeover; client_no_context_takeover"},
        {dflt, "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10"},
        {dflt, "permessage-deflate; client_max_window_bits=10; client_max_window_bits=10"},
        {dflt, "permessage-deflate; server_no_context_takeover=1"},
        {dflt, "permessage-deflate; client_no_context_takeover=1"},
        {dflt, "permessage-deflate; server_max_window_bits"},     // value required
        {dflt, "permessage-deflate; client_max_window_bits"},     // value required in a response
        {dflt, "permessage-deflate; server_max_window_bits=7"},
        {dflt, "permessage-deflate; server_max_window_bits=16"},
        {dflt, "permessage-deflate; client_max_window_bits=7"},
        {dflt, "permessage-deflate; client_max_window_bits=016"},
        {dflt, "permessage-deflate; client_max_window_bits=abc"},
        {ask_snct, "permessage-deflate"},                         // request not granted
        {ask_smwb10, "permessage-deflate"},                       // request not answered
        {ask_smwb10, "permessage-deflate; server_max_window_bits=11"}, // above the request
        {ask_smwb10, "permessage-deflate; server_max_window_bits=15"},
    };
    for (const auto& r : rows) {
        std::optional<deflate_params> out = plain;
        auto ec = corows::accept_deflate_response(parse(r.response), r.offered, out);
        BOOST_TEST((ec == corows::error::bad_extension), r.response);
        BOOST_TEST(!out.has_value(), r.response);
    }
}

BOOST_AUTO_TEST_CASE(client_rejects_client_max_window_bits_it_did_not_offer) {
    corows::deflate_offer_params offer; // permessage-deflate with no parameters
    std::optional<deflate_params> out;
    auto ec = corows::accept_deflate_response(parse("permessage-deflate; client_max_window_bits=10"),
                                              offer, out);
    BOOST_TEST((ec == corows::error::bad_extension));
    BOOST_TEST(!corows::accept_deflate_response(parse("permessage-deflate"), offer, out));
    BOOST_TEST((out == plain));
}

// Every combination of client and server settings: the client's offer goes through the
// server's negotiation and back; both ends must hold the same agreement, honouring both.
BOOST_AUTO_TEST_CASE(both_roles_agree) {
    const int bits[] = {8, 9, 12, 15};
    int checked = 0;
    for (int cs = 0; cs < 4; ++cs)
        for (int ss = 0; ss < 4; ++ss)
            for (int csmwb : bits)
                for (int ccmwb : bits)
                    for (int ssmwb : bits)
                        for (int scmwb : bits) {
                            deflate_options client = enabled();
                            client.server_no_context_takeover = cs & 1;
                            client.client_no_context_takeover = cs & 2;
                            client.server_max_window_bits = csmwb;
                            client.client_max_window_bits = ccmwb;
                            deflate_options server = enabled();
                            server.server_no_context_takeover = ss & 1;
                            server.client_no_context_takeover = ss & 2;
                            server.server_max_window_bits = ssmwb;
                            server.client_max_window_bits = scmwb;

                            std::string response;
                            auto at_server = corows::negotiate_deflate(
                                parse(corows::deflate_offer(client)), server, response);
                            BOOST_TEST_REQUIRE(at_server.has_value());
                            std::optional<deflate_params> at_client;
                            auto ec = corows::accept_deflate_response(parse(response), client, at_client);
                            BOOST_TEST_REQUIRE(!ec, response);
                            BOOST_TEST_REQUIRE(at_client.has_value());
                            BOOST_TEST_REQUIRE((*at_client == *at_server), response);
                            const auto& p = *at_client;
                            BOOST_TEST(p.server_no_context_takeover ==
                                       (client.server_no_context_takeover || server.server_no_context_takeover));
                            BOOST_TEST(p.client_no_context_takeover ==
                                       (client.client_no_context_takeover || server.client_no_context_takeover));
                            BOOST_TEST(p.server_max_window_bits == std::min(csmwb, ssmwb));
                            BOOST_TEST(p.client_max_window_bits == std::min(ccmwb, scmwb));
                            ++checked;
                        }
    BOOST_TEST(checked == 4 * 4 * 4 * 4 * 4 * 4);
}

// The default server answers every offer with server_no_context_takeover (RFC 7692 §7.1.1.1
// lets it), so its messages come from the shared compressor; the client keeps its window.
BOOST_AUTO_TEST_CASE(shared_default_imposes_server_no_context_takeover) {
    deflate_options server;
    server.enabled = true;
    BOOST_TEST(server.shared_compressor);
    for (std::string_view offer : {"permessage-deflate", "permessage-deflate; client_max_window_bits",
                                   "permessage-deflate; server_no_context_takeover",
                                   "permessage-deflate; client_max_window_bits=10"}) {
        std::string response;
        auto p = corows::negotiate_deflate(parse(offer), server, response);
        BOOST_TEST_REQUIRE(p.has_value());
        BOOST_TEST(p->server_no_context_takeover);
        BOOST_TEST(!p->client_no_context_takeover);
        BOOST_TEST(response.find("server_no_context_takeover") != std::string::npos);
        // The client accepts the answer to its own offer.
        std::optional<deflate_params> at_client;
        corows::deflate_offer_params o = *corows::parse_deflate_offer(parse(offer)[0]);
        BOOST_TEST(!corows::accept_deflate_response(parse(response), o, at_client));
        BOOST_TEST_REQUIRE(at_client.has_value());
        BOOST_TEST((*at_client == *p));
    }
}

// A client ignores shared_compressor: its default offer asks nothing of the server.
BOOST_AUTO_TEST_CASE(shared_default_leaves_client_offer_alone) {
    deflate_options client;
    client.enabled = true;
    BOOST_TEST(corows::deflate_offer(client) == "permessage-deflate; client_max_window_bits");
}

BOOST_AUTO_TEST_CASE(presets) {
    using corows::deflate_preset;
    auto shared = corows::deflate_preset_options(deflate_preset::shared);
    BOOST_TEST(shared.enabled);
    BOOST_TEST(shared.shared_compressor);
    BOOST_TEST(!shared.client_no_context_takeover);
    auto none = corows::deflate_preset_options(deflate_preset::no_context_takeover);
    BOOST_TEST((none.server_no_context_takeover && none.client_no_context_takeover));
    auto small = corows::deflate_preset_options(deflate_preset::small_window);
    BOOST_TEST(!small.shared_compressor);
    BOOST_TEST(small.server_max_window_bits == 11);
    BOOST_TEST(small.client_max_window_bits == 11);
    auto full = corows::deflate_preset_options(deflate_preset::full_context);
    BOOST_TEST((!full.shared_compressor && !full.server_no_context_takeover &&
                !full.client_no_context_takeover && full.server_max_window_bits == 15));

    std::string response;
    auto p = corows::negotiate_deflate(parse("permessage-deflate; client_max_window_bits"), none, response);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(response == "permessage-deflate; server_no_context_takeover; client_no_context_takeover");
    p = corows::negotiate_deflate(parse("permessage-deflate; client_max_window_bits"), small, response);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(response == "permessage-deflate; server_max_window_bits=11; client_max_window_bits=11");
    // small_window must impose the client's window: an offer that cannot take it is declined.
    p = corows::negotiate_deflate(parse("permessage-deflate"), small, response);
    BOOST_TEST(!p.has_value());
    p = corows::negotiate_deflate(parse("permessage-deflate; client_max_window_bits"), full, response);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(response == "permessage-deflate");
}

BOOST_AUTO_TEST_CASE(directions_follow_the_role) {
    deflate_params p = params(true, false, 10, 12);
    using corows::role;
    BOOST_TEST((corows::sending_direction(p, role::server) == corows::deflate_direction{10, true}));
    BOOST_TEST((corows::receiving_direction(p, role::server) == corows::deflate_direction{12, false}));
    BOOST_TEST((corows::sending_direction(p, role::client) == corows::deflate_direction{12, false}));
    BOOST_TEST((corows::receiving_direction(p, role::client) == corows::deflate_direction{10, true}));
}

BOOST_AUTO_TEST_CASE(one_configuration_for_both_directions) {
    deflate_params p = params(true, false, 10, 12);
    deflate_options mine = enabled();
    mine.level = 3;
    mine.mem_level = 4;
    mine.threshold = 100;
    mine.use_libdeflate = false;
    mine.final_block = true;
    auto server = corows::make_deflate_config(p, corows::role::server, mine);
    BOOST_TEST((server.send == corows::deflate_direction{10, true}));
    BOOST_TEST((server.receive == corows::deflate_direction{12, false}));
    BOOST_TEST(server.level == 3);
    BOOST_TEST(server.mem_level == 4);
    BOOST_TEST(server.threshold == 100u);
    BOOST_TEST(!server.use_libdeflate);
    BOOST_TEST(server.final_block);
    auto client = corows::make_deflate_config(p, corows::role::client, mine);
    BOOST_TEST((client.send == server.receive));
    BOOST_TEST((client.receive == server.send));
}

BOOST_AUTO_TEST_SUITE_END()
