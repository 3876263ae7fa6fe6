// SPDX-License-Identifier: BSL-1.0
// permessage-deflate round trips (compress, decompress, compare) three ways in one run:
//   init_per_frame  deflateInit2/inflateInit2 and deflateEnd/inflateEnd around every message
//   corows          corows::deflate_stream / corows::inflate_stream, kept for the connection
//   raw_zlib        a hand-written loop over persistent raw zlib streams doing the same work
// for JSON of 1, 4, 16 and 64 KB, with and without context takeover, on a corpus where every
// message differs and on one message repeated. Repetitions are interleaved (a, b, c, a, b,
// c, ...) and the best of each is reported, scaled to 10,000 messages. Time is the thread's
// CPU time, not wall time: on a shared machine that removes most of the noise of being
// descheduled, and the work is single-threaded and never waits.
//
// A second part (bench=deflate_shared) times compression alone, per message, of the
// paths a message without context takeover can take: the thread's shared zlib stream
// (deflateReset per message), libdeflate rewritten to the flush form, libdeflate's BFINAL
// output as is, beside a raw zlib deflate+deflateReset loop at the same level (vs_raw_zlib)
// and Beast's per-connection settings (level 8, memLevel 4, context takeover); then the
// shared inflater, and the per-connection memory each preset needs by zlib's formulas.
//
// Usage: deflate_bench [level] [repetitions] [size]   (build with --buildtype=release)
//        deflate_bench shared [repetitions]           (only the second part)
#include <corows/byte_buffer.hpp>
#include <corows/detail/shared_compressor.hpp>
#include <corows/detail/shared_inflater.hpp>
#include <corows/protocol/deflate_stream.hpp>
#include <corows/protocol/inflate_stream.hpp>

#include <zlib.h>

#include <algorithm>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr int window_bits = 15;
constexpr int mem_level = corows::default_deflate_mem_level;
constexpr std::uint8_t flush_tail[4] = {0x00, 0x00, 0xff, 0xff};

// Realistic JSON: an envelope and an array of records whose ids, names, prices and
// timestamps change, so the text compresses like API traffic rather than like zeros.
class json_generator {
public:
    explicit json_generator(unsigned seed) : rng_(seed) {}

    std::string make(std::size_t target) {
        static const char* const first[] = {"Alice", "Bob", "Carol", "Dave", "Erin", "Frank",
                                            "Grace", "Heidi", "Ivan", "Judy", "Mallory", "Oscar"};
        static const char* const cities[] = {"Berlin", "Lisbon", "Osaka", "Toronto", "Nairobi",
                                             "Lima", "Oslo", "Austin", "Pune", "Hanoi"};
        static const char* const status[] = {"active", "pending", "suspended", "closed"};
        std::string s = "{\"type\":\"update\",\"seq\":" + std::to_string(seq_++) +
                        ",\"server_time\":" + std::to_string(1700000000000ULL + rng_() % 100000000) +
                        ",\"records\":[";
        bool first_record = true;
        while (s.size() + 200 < target) {
            if (!first_record) s += ',';
            first_record = false;
            s += "{\"id\":" + std::to_string(rng_() % 10000000) + ",\"name\":\"" +
                 first[rng_() % 12] + " " + first[rng_() % 12] + "son\",\"email\":\"user" +
                 std::to_string(rng_() % 100000) + "@example.com\",\"city\":\"" + cities[rng_() % 10] +
                 "\",\"balance\":" + std::to_string(rng_() % 1000000) + "." +
                 std::to_string(10 + rng_() % 90) + ",\"status\":\"" + status[rng_() % 4] +
                 "\",\"verified\":" + (rng_() % 2 ? "true" : "false") + ",\"tags\":[\"t" +
                 std::to_string(rng_() % 50) + "\",\"t" + std::to_string(rng_() % 50) + "\"]}";
        }
        s += "],\"note\":\"";
        while (s.size() + 2 < target) s += static_cast<char>('a' + rng_() % 26);
        s += "\"}";
        return s;
    }

private:
    std::mt19937 rng_;
    unsigned seq_ = 1;
};

struct corpus {
    std::vector<std::string> messages; // cycled through; one entry for "repeated"
    std::size_t count = 0;             // messages per run
};

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "deflate_bench: %s\n", what);
    std::exit(1);
}

void verify(const std::uint8_t* data, std::size_t size, const std::string& original) {
    if (size != original.size() || std::memcmp(data, original.data(), size) != 0)
        die("round trip mismatch");
}

struct run_result {
    double seconds = 0;
    std::size_t compressed = 0;
    std::size_t original = 0;
};

// (a) A fresh pair of zlib streams for every message.
run_result run_init_per_frame(const corpus& c, int level) {
    std::vector<std::uint8_t> packed, unpacked;
    run_result r;
    double start = cpu_seconds();
    for (std::size_t i = 0; i < c.count; ++i) {
        const std::string& msg = c.messages[i % c.messages.size()];
        z_stream d{};
        if (deflateInit2(&d, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK)
            die("deflateInit2");
        packed.resize(deflateBound(&d, msg.size()) + 16);
        d.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(msg.data()));
        d.avail_in = static_cast<uInt>(msg.size());
        d.next_out = packed.data();
        d.avail_out = static_cast<uInt>(packed.size());
        if (deflate(&d, Z_SYNC_FLUSH) != Z_OK || d.avail_in != 0) die("deflate");
        std::size_t n = packed.size() - d.avail_out - 4;
        deflateEnd(&d);

        z_stream in{};
        if (inflateInit2(&in, -window_bits) != Z_OK) die("inflateInit2");
        unpacked.resize(msg.size() + 64);
        in.next_out = unpacked.data();
        in.avail_out = static_cast<uInt>(unpacked.size());
        in.next_in = packed.data();
        in.avail_in = static_cast<uInt>(n);
        if (inflate(&in, Z_SYNC_FLUSH) != Z_OK) die("inflate");
        in.next_in = const_cast<Bytef*>(flush_tail);
        in.avail_in = 4;
        int rc = inflate(&in, Z_SYNC_FLUSH);
        if (rc != Z_OK && rc != Z_BUF_ERROR) die("inflate tail");
        verify(unpacked.data(), unpacked.size() - in.avail_out, msg);
        inflateEnd(&in);
        r.compressed += n;
        r.original += msg.size();
    }
    r.seconds = cpu_seconds() - start;
    return r;
}

// (b) corows' connection-owned streams.
run_result run_corows(const corpus& c, int level, bool no_context_takeover) {
    corows::deflate_stream d(window_bits, no_context_takeover, level, mem_level);
    corows::inflate_stream in(window_bits, no_context_takeover);
    corows::byte_buffer message;
    run_result r;
    double start = cpu_seconds();
    for (std::size_t i = 0; i < c.count; ++i) {
        const std::string& msg = c.messages[i % c.messages.size()];
        std::error_code ec;
        auto payload = d.compress(corows::as_bytes(msg), ec);
        if (ec) die("corows compress");
        message.clear();
        if (in.write(payload, message, SIZE_MAX) || in.finish(message, SIZE_MAX))
            die("corows inflate");
        verify(message.data().data(), message.size(), msg);
        r.compressed += payload.size();
        r.original += msg.size();
    }
    r.seconds = cpu_seconds() - start;
    return r;
}

// (c) What a careful programmer writes against zlib directly: persistent streams, reused
// buffers sized up front, Z_SYNC_FLUSH and tail handling, reset for no context takeover.
run_result run_raw_zlib(const corpus& c, int level, bool no_context_takeover) {
    z_stream d{};
    z_stream in{};
    if (deflateInit2(&d, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY) != Z_OK)
        die("deflateInit2");
    if (inflateInit2(&in, -window_bits) != Z_OK) die("inflateInit2");
    std::size_t largest = 0;
    for (const auto& m : c.messages) largest = std::max(largest, m.size());
    std::vector<std::uint8_t> packed(deflateBound(&d, largest) + 16);
    std::vector<std::uint8_t> unpacked(largest + 64);
    run_result r;
    double start = cpu_seconds();
    for (std::size_t i = 0; i < c.count; ++i) {
        const std::string& msg = c.messages[i % c.messages.size()];
        d.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(msg.data()));
        d.avail_in = static_cast<uInt>(msg.size());
        d.next_out = packed.data();
        d.avail_out = static_cast<uInt>(packed.size());
        if (deflate(&d, Z_SYNC_FLUSH) != Z_OK || d.avail_in != 0 || d.avail_out == 0) die("deflate");
        std::size_t n = packed.size() - d.avail_out - 4;
        if (no_context_takeover) deflateReset(&d);

        in.next_out = unpacked.data();
        in.avail_out = static_cast<uInt>(unpacked.size());
        in.next_in = packed.data();
        in.avail_in = static_cast<uInt>(n);
        if (inflate(&in, Z_SYNC_FLUSH) != Z_OK) die("inflate");
        in.next_in = const_cast<Bytef*>(flush_tail);
        in.avail_in = 4;
        int rc = inflate(&in, Z_SYNC_FLUSH);
        if (rc != Z_OK && rc != Z_BUF_ERROR) die("inflate tail");
        verify(unpacked.data(), unpacked.size() - in.avail_out, msg);
        if (no_context_takeover) inflateReset(&in);
        r.compressed += n;
        r.original += msg.size();
    }
    r.seconds = cpu_seconds() - start;
    deflateEnd(&d);
    inflateEnd(&in);
    return r;
}

// Compression alone: `compress` turns each message into a payload; returns the best run.
template <class Compress>
run_result time_compress(const corpus& c, int reps, Compress compress) {
    run_result best;
    best.seconds = 1e9;
    for (int rep = 0; rep < reps; ++rep) {
        run_result r;
        double start = cpu_seconds();
        for (std::size_t i = 0; i < c.count; ++i) {
            const std::string& msg = c.messages[i % c.messages.size()];
            r.compressed += compress(msg).size();
            r.original += msg.size();
        }
        r.seconds = cpu_seconds() - start;
        if (r.seconds < best.seconds) best = r;
    }
    return best;
}

// Every payload of `compress` must inflate to its message with a fresh inflater.
template <class Compress>
void verify_no_context(const corpus& c, Compress compress) {
    corows::byte_buffer out;
    for (std::size_t i = 0; i < std::min<std::size_t>(c.count, 200); ++i) {
        const std::string& msg = c.messages[i];
        auto payload = compress(msg);
        out.clear();
        if (corows::detail::inflate_shared(payload, window_bits, out, SIZE_MAX)) die("shared inflate");
        verify(out.data().data(), out.size(), msg);
    }
}

class raw_zlib_no_context {
public:
    raw_zlib_no_context(int level, int mem) : buf_(1 << 20) {
        if (deflateInit2(&d_, level, Z_DEFLATED, -window_bits, mem, Z_DEFAULT_STRATEGY) != Z_OK)
            die("deflateInit2");
    }
    ~raw_zlib_no_context() { deflateEnd(&d_); }
    raw_zlib_no_context(const raw_zlib_no_context&) = delete;
    raw_zlib_no_context& operator=(const raw_zlib_no_context&) = delete;

    std::span<const std::uint8_t> operator()(const std::string& msg, bool reset = true) {
        d_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(msg.data()));
        d_.avail_in = static_cast<uInt>(msg.size());
        d_.next_out = buf_.data();
        d_.avail_out = static_cast<uInt>(buf_.size());
        if (deflate(&d_, Z_SYNC_FLUSH) != Z_OK || d_.avail_in != 0) die("deflate");
        std::size_t n = buf_.size() - d_.avail_out - 4;
        if (reset) deflateReset(&d_);
        return {buf_.data(), n};
    }

private:
    z_stream d_{};
    std::vector<std::uint8_t> buf_;
};

void shared_part(int reps) {
    std::printf("bench=deflate_shared libdeflate=%s\n",
                corows::detail::libdeflate_available() ? "yes" : "no");
    for (std::size_t size : {1024u, 16384u}) {
        std::size_t count = std::min<std::size_t>(10000, (16u << 20) / size);
        json_generator gen(777u + static_cast<unsigned>(size));
        corpus c;
        for (std::size_t i = 0; i < count; ++i) c.messages.push_back(gen.make(size));
        c.count = count;
        auto report = [&](const char* engine, int level, int mem, const run_result& r, const run_result& raw) {
            double us = r.seconds / static_cast<double>(c.count) * 1e6;
            std::printf("bench=deflate_shared size=%zu engine=%s level=%d mem_level=%d us_per_msg=%.2f "
                        "MB_per_s=%.0f ratio=%.3f vs_raw_zlib=%.2f raw_zlib_us=%.2f\n",
                        size, engine, level, mem, us,
                        static_cast<double>(r.original) / r.seconds / 1e6,
                        static_cast<double>(r.compressed) / static_cast<double>(r.original),
                        r.seconds / raw.seconds, raw.seconds / static_cast<double>(c.count) * 1e6);
            std::fflush(stdout);
        };
        for (int level : {1, 3, 6}) {
            raw_zlib_no_context raw_loop(level, 8);
            auto raw = time_compress(c, reps, [&](const std::string& m) { return raw_loop(m); });
            report("raw_zlib", level, 8, raw, raw);
            // Times compress_shared() under `s` after checking its output inflates back.
            auto measure_shared = [&](const char* name, int mem,
                                      const corows::detail::shared_deflate_settings& s) {
                auto f = [&](const std::string& m) {
                    std::error_code ec;
                    auto out = corows::detail::compress_shared(corows::as_bytes(m), s, ec);
                    if (ec) die("compress_shared");
                    return out;
                };
                verify_no_context(c, f);
                report(name, level, mem, time_compress(c, reps, f), raw);
            };
            for (int mem : {8, 4, 1}) {
                corows::detail::shared_deflate_settings s;
                s.level = level;
                s.mem_level = mem;
                s.use_libdeflate = false;
                measure_shared("shared_zlib", mem, s);
            }
            if (!corows::detail::libdeflate_available()) continue;
            for (bool final_block : {false, true}) {
                corows::detail::shared_deflate_settings s;
                s.level = level;
                s.final_block = final_block;
                measure_shared(final_block ? "libdeflate_bfinal" : "libdeflate", 0, s);
            }
        }
        {
            // Beast 1.74's settings in the echo benchmark: level 8, memLevel 4, takeover.
            raw_zlib_no_context raw_loop(3, 8);
            auto raw = time_compress(c, reps, [&](const std::string& m) { return raw_loop(m); });
            corows::deflate_stream beast(window_bits, false, 8, 4);
            auto f = [&](const std::string& m) {
                std::error_code ec;
                auto out = beast.compress(corows::as_bytes(m), ec);
                if (ec) die("compress");
                return out;
            };
            report("beast_takeover_zlib", 8, 4, time_compress(c, reps, f), raw);
            corows::deflate_stream ours(window_bits, false, 3, 8);
            auto g = [&](const std::string& m) {
                std::error_code ec;
                auto out = ours.compress(corows::as_bytes(m), ec);
                if (ec) die("compress");
                return out;
            };
            report("takeover_zlib", 3, 8, time_compress(c, reps, g), raw);
        }
        {
            // The receiving side: the shared inflater on what the default sends.
            corows::detail::shared_deflate_settings s;
            std::vector<std::vector<std::uint8_t>> payloads;
            for (const auto& m : c.messages) {
                std::error_code ec;
                auto p = corows::detail::compress_shared(corows::as_bytes(m), s, ec);
                payloads.emplace_back(p.begin(), p.end());
            }
            corows::byte_buffer out;
            double best = 1e9;
            for (int rep = 0; rep < reps; ++rep) {
                double start = cpu_seconds();
                for (const auto& p : payloads) {
                    out.clear();
                    if (corows::detail::inflate_shared(p, window_bits, out, SIZE_MAX)) die("inflate_shared");
                }
                best = std::min(best, cpu_seconds() - start);
            }
            std::printf("bench=deflate_shared size=%zu engine=inflate_shared us_per_msg=%.2f\n", size,
                        best / static_cast<double>(c.count) * 1e6);
        }
    }
    // zlib's state sizes (zconf.h): deflate 2^(w+2) + 2^(m+9), inflate 2^w + ~7 KiB.
    auto deflate_kib = [](int w, int m) { return ((1 << (w + 2)) + (1 << (m + 9))) / 1024; };
    auto inflate_kib = [](int w) { return ((1 << w) + 7 * 1024) / 1024; };
    std::printf("bench=deflate_memory preset=shared per_connection_kib=%d (deflate 0, inflate %d)\n",
                inflate_kib(15), inflate_kib(15));
    std::printf("bench=deflate_memory preset=no_context_takeover per_connection_kib=0\n");
    std::printf("bench=deflate_memory preset=small_window per_connection_kib=%d (deflate %d, inflate %d)\n",
                deflate_kib(11, 3) + inflate_kib(11), deflate_kib(11, 3), inflate_kib(11));
    std::printf("bench=deflate_memory preset=full_context per_connection_kib=%d (deflate %d, inflate %d)\n",
                deflate_kib(15, 8) + inflate_kib(15), deflate_kib(15, 8), inflate_kib(15));
    std::printf("bench=deflate_memory preset=beast per_connection_kib=%d (deflate %d, inflate %d)\n",
                deflate_kib(15, 4) + inflate_kib(15), deflate_kib(15, 4), inflate_kib(15));
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "shared") == 0) {
        shared_part(argc > 2 ? std::max(1, std::atoi(argv[2])) : 5);
        return 0;
    }
    int level = argc > 1 ? std::atoi(argv[1]) : corows::default_deflate_level;
    int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    std::size_t only = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 0;
    for (std::size_t size : {1024u, 4096u, 16384u, 65536u}) {
        if (only != 0 && size != only) continue;
        // Keep each varying corpus near 16 MB of distinct text; report per 10,000 anyway.
        std::size_t count = std::min<std::size_t>(10000, (16u << 20) / size);
        json_generator gen(12345u + static_cast<unsigned>(size));
        corpus varying;
        for (std::size_t i = 0; i < count; ++i) varying.messages.push_back(gen.make(size));
        varying.count = count;
        corpus repeated{{varying.messages.front()}, count};

        for (bool no_takeover : {false, true}) {
            for (const corpus* c : {&varying, &repeated}) {
                if (!no_takeover && c == &varying) {
                    // Warm up caches, allocator and CPU clock once, untimed.
                    run_init_per_frame(*c, level);
                    run_corows(*c, level, no_takeover);
                    run_raw_zlib(*c, level, no_takeover);
                }
                run_result best_a, best_b, best_c;
                best_a.seconds = best_b.seconds = best_c.seconds = 1e9;
                for (int rep = 0; rep < reps; ++rep) {
                    auto a = run_init_per_frame(*c, level);
                    auto b = run_corows(*c, level, no_takeover);
                    auto r = run_raw_zlib(*c, level, no_takeover);
                    if (a.seconds < best_a.seconds) best_a = a;
                    if (b.seconds < best_b.seconds) best_b = b;
                    if (r.seconds < best_c.seconds) best_c = r;
                }
                double scale = 10000.0 / static_cast<double>(count) * 1000.0;
                std::printf("bench=deflate mode=%s size=%zu corpus=%s ms_per_10k=%.1f "
                            "vs_raw_zlib=%.2f vs_init_per_frame=%.2f ratio=%.3f "
                            "raw_zlib_ms=%.1f init_per_frame_ms=%.1f messages=%zu level=%d\n",
                            no_takeover ? "no_takeover" : "takeover", size,
                            c == &varying ? "varying" : "repeated", best_b.seconds * scale,
                            best_b.seconds / best_c.seconds, best_b.seconds / best_a.seconds,
                            static_cast<double>(best_b.compressed) / static_cast<double>(best_b.original),
                            best_c.seconds * scale, best_a.seconds * scale, count, level);
                std::fflush(stdout);
            }
        }
    }
    shared_part(reps);
}
