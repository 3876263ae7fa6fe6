// The OS calls behind corows/detail/platform.hpp.
#include <corows/detail/platform.hpp>

#ifndef _WIN32
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace corows::detail {

#ifdef _WIN32

// See the header: no descriptor limit to read, a bound on memory instead.
std::size_t descriptor_limit() noexcept { return 16384; }

std::size_t raise_descriptor_limit(std::size_t) noexcept { return descriptor_limit(); }

#else

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
