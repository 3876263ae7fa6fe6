// SPDX-License-Identifier: BSL-1.0
// The OS calls behind corows/detail/platform.hpp.
#include <corows/detail/platform.hpp>

#ifdef _WIN32
#include <winsock2.h>
#include <windows.h>

#include <memory>
#include <new>
#include <vector>
#else
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace corows::detail {

#ifdef _WIN32

socket_flag listener_address_option() noexcept { return socket_flag(SOL_SOCKET, SO_EXCLUSIVEADDRUSE, true); }

socket_flag reuse_port_option(bool on) noexcept { return socket_flag(SOL_SOCKET, 0, on); }

std::error_code socket_error(std::errc e) noexcept {
    switch (e) {
    case std::errc::connection_reset: return {WSAECONNRESET, std::system_category()};
    case std::errc::connection_aborted: return {WSAECONNABORTED, std::system_category()};
    case std::errc::not_connected: return {WSAENOTCONN, std::system_category()};
    // Winsock's send() on a socket shut down for writing.
    case std::errc::broken_pipe: return {WSAESHUTDOWN, std::system_category()};
    case std::errc::timed_out: return {WSAETIMEDOUT, std::system_category()};
    default: return {static_cast<int>(e), std::system_category()};
    }
}

// See the header: no descriptor limit to read, a bound on memory instead.
std::size_t descriptor_limit() noexcept { return 16384; }

std::size_t raise_descriptor_limit(std::size_t) noexcept { return descriptor_limit(); }

#ifdef __MINGW32__
namespace {

// One thread's registrations; what its fiber-local storage slot points to.
using exit_calls = std::vector<std::pair<void*, void (*)(void*)>>;

// Windows calls it with the slot's value as the thread exits, after winpthreads' key
// destructors (seen under wine), so after emutls has freed the thread's thread_locals: it is
// handed the objects themselves and reads none. A thread_local destructor that used a cache
// before this ran got a new one (its pointer was freed with the rest), registered here too.
void WINAPI run_exit_calls(void* calls) {
    std::unique_ptr<exit_calls> owned(static_cast<exit_calls*>(calls));
    for (auto it = owned->rbegin(); it != owned->rend(); ++it) it->second(it->first);
}

} // namespace

void at_thread_exit(void* object, void (*destroy)(void*)) {
    static const DWORD slot = FlsAlloc(run_exit_calls);
    auto* calls = static_cast<exit_calls*>(FlsGetValue(slot));
    if (calls == nullptr) {
        auto made = std::make_unique<exit_calls>();
        if (!FlsSetValue(slot, made.get())) throw std::bad_alloc();
        calls = made.release();
    }
    calls->emplace_back(object, destroy);
}
#endif

#else

socket_flag listener_address_option() noexcept { return socket_flag(SOL_SOCKET, SO_REUSEADDR, true); }

socket_flag reuse_port_option(bool on) noexcept {
#ifdef SO_REUSEPORT
    return socket_flag(SOL_SOCKET, SO_REUSEPORT, on);
#else
    return socket_flag(SOL_SOCKET, 0, on);
#endif
}

std::error_code socket_error(std::errc e) noexcept { return {static_cast<int>(e), std::system_category()}; }

std::size_t descriptor_limit() noexcept {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 0;
    return static_cast<std::size_t>(lim.rlim_cur);
}

std::size_t raise_descriptor_limit(std::size_t wanted) noexcept {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < wanted) {
        lim.rlim_cur = lim.rlim_max == RLIM_INFINITY || lim.rlim_max > wanted ? static_cast<rlim_t>(wanted)
                                                                                : lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    return descriptor_limit();
}

#endif

#if !COROWS_HAS_UNIX_SOCKETS

socket_file::socket_file(std::string) {}
socket_file::~socket_file() = default;

#else

socket_file::socket_file(std::string path) : path_(std::move(path)) {
    struct stat st {};
    if (path_.empty() || ::stat(path_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) path_.clear();
    else {
        device_ = static_cast<unsigned long long>(st.st_dev);
        inode_ = static_cast<unsigned long long>(st.st_ino);
    }
}

socket_file::~socket_file() {
    struct stat st {};
    if (!path_.empty() && ::stat(path_.c_str(), &st) == 0 && static_cast<unsigned long long>(st.st_dev) == device_ &&
        static_cast<unsigned long long>(st.st_ino) == inode_)
        ::unlink(path_.c_str());
}

#endif

} // namespace corows::detail
