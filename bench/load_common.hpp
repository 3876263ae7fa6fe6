// SPDX-License-Identifier: BSL-1.0
// What the load generators of bench/ share (echo/echo_load.cpp, fanout/fanout_load.cpp):
// their command-line walk with strict number parsing, a latency histogram, CPU time of this
// and of other processes, and the file descriptor limit.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace corows_bench {

// `text` as a number in lo..hi, or invalid_argument naming `arg`.
inline double parse_number(std::string_view arg, const std::string& text, double lo, double hi) {
    // strtod, not std::from_chars: libc++ 16 has no from_chars for double. Unlike from_chars
    // it skips leading blanks and reads "nan", hence the two extra checks.
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool whole = !text.empty() && !std::isspace(static_cast<unsigned char>(text.front())) &&
                       end == text.c_str() + text.size();
    if (!whole || !(v >= lo && v <= hi)) {
        std::string what(arg);
        what += " needs a number in ";
        what += std::to_string(lo);
        what += "..";
        what += std::to_string(hi);
        throw std::invalid_argument(what);
    }
    return v;
}

// A command line, one option at a time: `for (args a(argc, argv); a.next();)`.
class args {
public:
    args(int argc, char** argv) : argc_(argc), argv_(argv) {}
    // Moves to the next option; false after the last.
    bool next() {
        if (++i_ >= argc_) return false;
        arg_ = argv_[i_];
        return true;
    }
    // The current option.
    std::string_view arg() const { return arg_; }
    // The current option's value (the next argument), or invalid_argument.
    std::string value() {
        if (i_ + 1 >= argc_) throw std::invalid_argument(std::string(arg_) + " needs a value");
        return argv_[++i_];
    }
    // The value as a number in lo..hi, or invalid_argument.
    double number(double lo, double hi) { return parse_number(arg_, value(), lo, hi); }
    // The value as a whole count in lo..hi, or invalid_argument.
    std::size_t count(double lo, double hi) { return static_cast<std::size_t>(number(lo, hi)); }

private:
    int argc_;
    char** argv_;
    int i_ = 0;
    std::string_view arg_;
};

// Log-linear buckets over nanoseconds: exact below 128 ns, then 64 buckets per power of two
// (under 1.6% error), up to about 2^40 ns. Fixed size: recording never allocates.
class histogram {
public:
    void record(std::uint64_t ns) noexcept {
        ++counts_[std::min(index(ns), counts_.size() - 1)];
        ++total_;
    }
    std::uint64_t total() const noexcept { return total_; }
    // The value at quantile q (0..1), as the middle of its bucket, in nanoseconds.
    double quantile(double q) const noexcept {
        if (total_ == 0) return 0;
        auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_ - 1));
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            seen += counts_[i];
            if (seen > rank) return (lower(i) + lower(i + 1)) / 2.0;
        }
        return lower(counts_.size());
    }

private:
    static constexpr unsigned sub_bits = 6;
    static constexpr std::size_t sub = std::size_t{1} << sub_bits;
    static std::size_t index(std::uint64_t v) noexcept {
        if (v < 2 * sub) return static_cast<std::size_t>(v);
        unsigned shift = static_cast<unsigned>(std::bit_width(v)) - (sub_bits + 1);
        return (shift + 1) * sub + static_cast<std::size_t>((v >> shift) - sub);
    }
    static double lower(std::size_t i) noexcept {
        if (i < 2 * sub) return static_cast<double>(i);
        std::size_t shift = i / sub - 1;
        return static_cast<double>((i % sub + sub) << shift);
    }
    std::array<std::uint64_t, 36 * sub> counts_{};
    std::uint64_t total_ = 0;
};

// CPU seconds (user + system) used so far by this process.
inline double own_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return secs(u.ru_utime) + secs(u.ru_stime);
}

// CPU seconds used so far by a process, split as the kernel accounts them.
struct cpu_seconds {
    double user = -1;   ///< in the process's own code and its libraries
    double system = -1; ///< in the kernel on its behalf (system calls, the network stack)
    double total() const noexcept { return user < 0 || system < 0 ? -1 : user + system; }
};

// CPU seconds used so far by process `pid` (from /proc/PID/stat); both negative if unknown.
inline cpu_seconds process_cpu_times(long pid) {
    if (pid <= 0) return {};
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f) return {};
    char buf[1024];
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const char* p = std::strrchr(buf, ')');
    if (!p) return {};
    unsigned long long utime = 0, stime = 0;
    // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return {};
    const auto tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    return {static_cast<double>(utime) / tick, static_cast<double>(stime) / tick};
}

// CPU seconds (user + system) used so far by process `pid`; negative if unknown.
inline double process_cpu_seconds(long pid) { return process_cpu_times(pid).total(); }

// Every connection is a file descriptor: take all the kernel allows.
inline void raise_fd_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

} // namespace corows_bench
