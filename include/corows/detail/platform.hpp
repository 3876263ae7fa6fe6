// SPDX-License-Identifier: BSL-1.0
// Every difference between the operating systems corows runs on, in one place: how a TCP
// listener holds its port, whether threads can share one, whether Unix domain sockets exist,
// the descriptor limit behind the default connection limit, a Unix server's socket file, and
// how a per-thread cache is destroyed when its thread exits.
// The OS calls and constants behind it are in src/detail/platform.cpp, so that no <sys/...>,
// <winsock2.h> or Asio header reaches a user's program (or the protocol core) through it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

// Unix domain sockets (asio::local): not on Windows, so there is no corows::unix_server,
// connect_unix() or Redis link over a socket file there. Asio does declare them for Windows 10
// (AF_UNIX since version 1803), but nothing could test them here (wine 8 has no AF_UNIX) and
// a socket file's lifetime (socket_file) is POSIX's.
#ifdef _WIN32
#define COROWS_HAS_UNIX_SOCKETS 0
#else
#define COROWS_HAS_UNIX_SOCKETS 1
#endif

// ThreadSanitizer's builds (g++ says so with a macro, clang with __has_feature).
#if defined(__SANITIZE_THREAD__)
#define COROWS_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COROWS_DETAIL_TSAN 1
#endif
#endif
#ifndef COROWS_DETAIL_TSAN
#define COROWS_DETAIL_TSAN 0
#endif

namespace corows::detail {

/// Adds `n` to `v`, which no other thread writes (others read it with atomic loads). On
/// x86-64 one plain `add` to memory: an aligned 8-byte store is atomic there, and a relaxed
/// load and store would take three instructions on a path that counts every message. Under
/// ThreadSanitizer, and elsewhere, the relaxed load and store.
inline void single_writer_add(std::atomic<std::uint64_t>& v, std::uint64_t n) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !COROWS_DETAIL_TSAN
    static_assert(sizeof(v) == sizeof(std::uint64_t) && alignof(std::atomic<std::uint64_t>) == 8);
    __asm__("addq %1, %0" : "+m"(*reinterpret_cast<std::uint64_t*>(&v)) : "er"(n));
#else
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
#endif
}

/// An int-valued socket option for Asio's set_option() (its SettableSocketOption).
class socket_flag {
public:
    /// Option `name` of level `level` set to `on`.
    socket_flag(int level, int name, bool on) noexcept : level_(level), name_(name), value_(on ? 1 : 0) {}
    template <class Protocol> int level(const Protocol&) const noexcept { return level_; }
    template <class Protocol> int name(const Protocol&) const noexcept { return name_; }
    template <class Protocol> const void* data(const Protocol&) const noexcept { return &value_; }
    template <class Protocol> std::size_t size(const Protocol&) const noexcept { return sizeof(value_); }

private:
    int level_;
    int name_;
    int value_;
};

/// The option a TCP listener sets before bind() so that a restarted server gets its port
/// back at once and no other process can share it: SO_REUSEADDR on POSIX (binding over
/// connections in TIME_WAIT; another listener is still refused). On Windows SO_REUSEADDR
/// would let any other socket bind the same port and steal connections, and a port in
/// TIME_WAIT can be bound there anyway: SO_EXCLUSIVEADDRUSE instead.
socket_flag listener_address_option() noexcept;

/// True where SO_REUSEPORT spreads incoming connections over the sockets sharing a port
/// (Linux): only there does a server give each thread its own listener.
inline constexpr bool reuse_port_balances =
#ifdef __linux__
    true;
#else
    false;
#endif

/// True where /proc/self describes this process (Linux): the tests read its memory and
/// descriptors there.
inline constexpr bool has_proc_self =
#ifdef __linux__
    true;
#else
    false;
#endif

/// SO_REUSEPORT set to `on`; only called where reuse_port_balances.
socket_flag reuse_port_option(bool on) noexcept;

/// `e` as the operating system's socket calls report it in std::system_category(): errno's
/// value on POSIX; on Windows the Winsock code (WSAECONNRESET for connection_reset, ...),
/// which that category maps to no std::errc, for the few errors corows classifies
/// (connection_reset, connection_aborted, not_connected, broken_pipe, timed_out); other
/// values as on POSIX.
std::error_code socket_error(std::errc e) noexcept;

/// How many descriptors (sockets and files) this process may have open, for the default
/// connection limit: RLIMIT_NOFILE's soft limit on POSIX, 0 where it is unlimited or
/// unreadable. Windows has no such limit: a socket is a kernel handle, bounded by memory
/// rather than by a per-process count that accept() would run into and spin on, so there
/// it is a fixed 16384, which bounds the memory of idle connections instead (about 30 MiB
/// of corows' own state at 1.9 KiB each), and a server that expects more sets
/// server_options::max_connections.
std::size_t descriptor_limit() noexcept;

/// Raises the soft descriptor limit towards `wanted` (at most to the hard limit; never
/// lowers it); returns descriptor_limit() afterwards. On Windows: nothing to raise.
std::size_t raise_descriptor_limit(std::size_t wanted) noexcept;

/// The file of a bound Unix domain socket, removed on destruction unless something else has
/// taken its path since (another server after a stale one was removed, say). Without Unix
/// domain sockets (Windows) it notes nothing and removes nothing.
class socket_file {
public:
    /// Notes the socket file at `path` as it is now; no file (an abstract socket): nothing.
    explicit socket_file(std::string path);
    socket_file(socket_file&& o) noexcept : path_(std::move(o.path_)), device_(o.device_), inode_(o.inode_) {
        o.path_.clear();
    }
    socket_file& operator=(socket_file&&) = delete;
    /// Removes the file if it is still the one noted.
    ~socket_file();

private:
    std::string path_;
    unsigned long long device_ = 0;
    unsigned long long inode_ = 0;
};

#ifdef __MINGW32__
/// Has `destroy(object)` called when the calling thread exits, in the reverse order of
/// registration; not for the main thread (the process is ending). For per_thread below.
void at_thread_exit(void* object, void (*destroy)(void*));
#endif

/// The calling thread's T for `Tag` (a type that names the call site, so that two caches of
/// one type stay apart), made on the first call from each thread and destroyed
/// when that thread exits. Every per-thread cache of corows is one.
///
/// Everywhere but MinGW-w64 it is a function-local thread_local, with the same code and cost.
/// MinGW-w64's g++ emulates TLS (emutls) and runs thread_local destructors from a winpthreads
/// key destructor registered after emutls' own, which frees every thread_local of the exiting
/// thread first: each destructor runs on freed memory, and with several threads exiting at
/// once another thread's allocation has often reused it (heap corruption, a crash in free()).
/// There the thread_local holds only a pointer (no destructor) and the object is destroyed by
/// a fiber-local storage callback (at_thread_exit), which is given the object itself.
template <class T, class Tag>
T& per_thread() {
#ifdef __MINGW32__
    thread_local T* value = nullptr;
    if (value == nullptr) [[unlikely]] {
        auto made = std::make_unique<T>();
        at_thread_exit(made.get(), [](void* object) { std::unique_ptr<T> owned(static_cast<T*>(object)); });
        value = made.release();
    }
    return *value;
#else
    thread_local T value;
    return value;
#endif
}

} // namespace corows::detail
