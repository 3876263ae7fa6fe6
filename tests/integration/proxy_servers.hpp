// SPDX-License-Identifier: BSL-1.0
// Real proxies for one test: tinyproxy (HTTP CONNECT) and microsocks (SOCKS5), each started on
// a free loopback port with a temp config, killed (SIGKILL) and cleaned up with the object.
// Tests that need one skip when it is not installed (COROWS_SKIP_WITHOUT(program)).
#pragma once

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace corows::test {

/// `name`'s path from PATH (or /usr/sbin, where Debian puts daemons), or empty.
inline std::string find_program(std::string_view name) {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    dirs += ":/usr/sbin";
    std::string_view rest = dirs;
    while (true) {
        const auto colon = rest.find(':');
        const std::filesystem::path dir(std::string(rest.substr(0, colon)));
        if (!dir.empty()) {
            const auto candidate = dir / std::string(name);
            if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
        }
        if (colon == std::string_view::npos) return {};
        rest.remove_prefix(colon + 1);
    }
}

/// A free TCP port on 127.0.0.1 (free when probed: nothing listens there afterwards).
inline unsigned short free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) < 0) {
        const int e = errno;
        ::close(fd);
        throw std::system_error(e, std::generic_category(), "bind");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

/// One proxy process on 127.0.0.1:port(), with its own temp directory (config, log).
class proxy_process {
public:
    /// tinyproxy in the foreground; with `user` non-empty it demands Basic credentials.
    static proxy_process tinyproxy(const std::string& user = {}, const std::string& password = {}) {
        return proxy_process("tinyproxy", [&](const std::filesystem::path& dir, unsigned short port) {
            std::ofstream conf(dir / "tinyproxy.conf");
            // No ConnectPort line: CONNECT to every port is allowed (the targets use free ports).
            conf << "Port " << port << "\nListen 127.0.0.1\nAllow 127.0.0.1\nTimeout 30\nMaxClients 50\n"
                 << "LogLevel Info\n";
            if (!user.empty()) conf << "BasicAuth " << user << " " << password << "\n";
            return std::vector<std::string>{"-d", "-c", (dir / "tinyproxy.conf").string()};
        });
    }

    /// microsocks; with `user` non-empty it demands RFC 1929 credentials.
    static proxy_process microsocks(const std::string& user = {}, const std::string& password = {}) {
        return proxy_process("microsocks", [&](const std::filesystem::path&, unsigned short port) {
            std::vector<std::string> args{"-i", "127.0.0.1", "-p", std::to_string(port)};
            if (!user.empty()) args.insert(args.end(), {"-u", user, "-P", password});
            return args;
        });
    }

    proxy_process(proxy_process&& o) noexcept
        : dir_(std::move(o.dir_)), port_(o.port_), pid_(std::exchange(o.pid_, -1)) {
        o.dir_.clear();
    }
    proxy_process(const proxy_process&) = delete;
    proxy_process& operator=(const proxy_process&) = delete;
    proxy_process& operator=(proxy_process&&) = delete;
    /// Kills the process and removes its directory.
    ~proxy_process() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
            }
        }
        std::error_code ignored;
        if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
    }

    /// The port it listens on.
    unsigned short port() const noexcept { return port_; }
    /// "127.0.0.1:port".
    std::string authority() const { return "127.0.0.1:" + std::to_string(port_); }

private:
    template <class MakeArgs>
    proxy_process(const std::string& name, MakeArgs make_args) {
        const std::string binary = find_program(name);
        if (binary.empty()) throw std::runtime_error(name + " is not installed");
        char pattern[] = "/tmp/corows-proxy-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::system_error(errno, std::generic_category(), "mkdtemp");
        dir_ = pattern;
        // Another process may take the free port between the probe and the bind: try again.
        for (int attempt = 0;; ++attempt) {
            port_ = free_loopback_port();
            std::vector<std::string> args = make_args(dir_, port_);
            args.insert(args.begin(), binary);
            if (start(args)) return;
            if (attempt == 4) {
                const std::string why = name + " did not come up:\n" + log();
                std::error_code ignored;
                std::filesystem::remove_all(dir_, ignored);
                throw std::runtime_error(why);
            }
        }
    }

    bool start(std::vector<std::string>& args) {
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const auto log_path = (dir_ / "log").string();
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) throw std::system_error(rc, std::generic_category(), "posix_spawn " + args[0]);
        pid_ = pid;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!accepts()) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_ || std::chrono::steady_clock::now() > give_up) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                pid_ = -1;
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return true;
    }

    bool accepts() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return false;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port_);
        const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        return ok;
    }

    std::string log() const {
        std::ifstream in(dir_ / "log");
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }

    std::filesystem::path dir_;
    unsigned short port_ = 0;
    pid_t pid_ = -1;
};

} // namespace corows::test

/// Returns from the calling test, with a message, when `program` is not installed.
#define COROWS_SKIP_WITHOUT(program)                                                          \
    do {                                                                                     \
        if (corows::test::find_program(program).empty()) {                                  \
            BOOST_TEST_MESSAGE(program " is not installed: test skipped");                   \
            return;                                                                          \
        }                                                                                    \
    } while (false)
