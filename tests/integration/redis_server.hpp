// SPDX-License-Identifier: BSL-1.0
// corows::test::redis_server: a real redis-server for one test, on a free loopback port (and,
// if asked, a Unix socket and a password), with no persistence; it can be killed (SIGKILL)
// and restarted on the same port, and dies with the object. Tests that need one skip when
// redis_server::available() is false (redis-server not on PATH).
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
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace corows::test {

class redis_server {
public:
    /// What the server is started with besides a free port.
    struct settings {
        /// Also listen on a Unix socket (unix_path()).
        bool unix_socket = false;
        /// Non-empty: --requirepass.
        std::string password;
        /// More command-line arguments, e.g. {"--maxclients", "10"}.
        std::vector<std::string> extra_args;
    };

    /// redis-server's path from PATH, or empty if it is not installed.
    static std::string find_binary() {
        const char* path = std::getenv("PATH");
        std::string_view rest = path ? path : "/usr/local/bin:/usr/bin:/bin";
        while (true) {
            auto colon = rest.find(':');
            std::filesystem::path dir(std::string(rest.substr(0, colon)));
            if (!dir.empty()) {
                auto candidate = dir / "redis-server";
                if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
            }
            if (colon == std::string_view::npos) break;
            rest.remove_prefix(colon + 1);
        }
        return {};
    }

    /// True if redis-server is on PATH.
    static bool available() { return !find_binary().empty(); }

    /// A server without password or Unix socket (see the other constructor).
    redis_server() : redis_server(settings{}) {}

    /// Starts a server and waits until it accepts connections; throws std::runtime_error if
    /// redis-server is missing or does not come up.
    explicit redis_server(settings s) : settings_(std::move(s)), binary_(find_binary()) {
        if (binary_.empty()) throw std::runtime_error("redis-server is not on PATH");
        char pattern[] = "/tmp/corows-redis-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::system_error(errno, std::generic_category(), "mkdtemp");
        dir_ = pattern;
        if (settings_.unix_socket) unix_path_ = (dir_ / "redis.sock").string();
        // Another process may take the free port between the probe and redis' bind: try again.
        for (int attempt = 0;; ++attempt) {
            port_ = free_port();
            try {
                start();
                return;
            } catch (const std::exception&) {
                if (attempt == 4) {
                    cleanup();
                    throw;
                }
            }
        }
    }

    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    /// Kills the server and removes its directory.
    ~redis_server() { cleanup(); }

    /// The TCP port on 127.0.0.1.
    unsigned short port() const noexcept { return port_; }
    /// The Unix socket's path (empty unless settings::unix_socket).
    const std::string& unix_path() const noexcept { return unix_path_; }
    /// The password it requires (empty: none).
    const std::string& password() const noexcept { return settings_.password; }
    /// True between a start and a kill.
    bool running() const noexcept { return pid_ > 0; }

    /// SIGKILL, and waits for the process to be gone: connections drop without a goodbye.
    void kill() noexcept {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        pid_ = -1;
    }

    /// Kills the server if it runs, then starts a new one on the same port (and socket path);
    /// throws std::runtime_error if it does not come up.
    void restart() {
        kill();
        start();
    }

private:
    static unsigned short free_port() {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        socklen_t len = sizeof a;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) < 0) {
            int e = errno;
            ::close(fd);
            throw std::system_error(e, std::generic_category(), "bind");
        }
        ::close(fd);
        return ntohs(a.sin_port);
    }

    void start() {
        std::vector<std::string> args{binary_,           "--port",         std::to_string(port_),
                                      "--bind",          "127.0.0.1",      "--save",
                                      "",                "--appendonly",   "no",
                                      "--daemonize",     "no",             "--dir",
                                      dir_.string(),     "--loglevel",     "warning"};
        if (!unix_path_.empty()) {
            args.insert(args.end(), {"--unixsocket", unix_path_, "--unixsocketperm", "700"});
        }
        if (!settings_.password.empty()) args.insert(args.end(), {"--requirepass", settings_.password});
        args.insert(args.end(), settings_.extra_args.begin(), settings_.extra_args.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);

        // Its output goes to a log in its directory, shown if it does not come up.
        auto log = (dir_ / "redis.log").string();
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
        pid_t pid = -1;
        int rc = ::posix_spawn(&pid, binary_.c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) throw std::system_error(rc, std::generic_category(), "posix_spawn redis-server");
        pid_ = pid;

        auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!accepts()) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("redis-server exited at start:\n" + read_log());
            }
            if (std::chrono::steady_clock::now() > give_up) {
                kill();
                throw std::runtime_error("redis-server did not accept connections within 10 s:\n" + read_log());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }

    // One blocking loopback connect: refused at once until redis listens.
    bool accepts() const {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return false;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port_);
        bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (!ok || unix_path_.empty()) return ok;
        // Redis binds TCP first; the socket file comes right after.
        struct stat st {};
        return ::stat(unix_path_.c_str(), &st) == 0;
    }

    std::string read_log() const {
        std::ifstream in(dir_ / "redis.log");
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }

    void cleanup() noexcept {
        kill();
        std::error_code ignored;
        if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
    }

    settings settings_;
    std::string binary_;
    std::filesystem::path dir_;
    std::string unix_path_;
    unsigned short port_ = 0;
    pid_t pid_ = -1;
};

} // namespace corows::test

/// Returns from the calling test, with a message, when redis-server is not installed.
#define COROWS_SKIP_WITHOUT_REDIS()                                                           \
    do {                                                                                     \
        if (!corows::test::redis_server::available()) {                                     \
            BOOST_TEST_MESSAGE("redis-server is not on PATH: test skipped");                 \
            return;                                                                          \
        }                                                                                    \
    } while (false)
