// SPDX-License-Identifier: BSL-1.0
// corows::basic_server<Stream>: listens, accepts, and runs one coroutine (or a set of event
// callbacks) per WebSocket connection, on one thread or on N threads each with its own
// io_context, and stops gracefully.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/admission.hpp>
#include <corows/detail/answer_and_close.hpp>
#include <corows/detail/close_at_deadline.hpp>
#include <corows/detail/drain_schedule.hpp>
#include <corows/detail/handler_thread.hpp>
#include <corows/detail/listener.hpp>
#include <corows/detail/log_limiter.hpp>
#include <corows/detail/server_counters.hpp>
#include <corows/error.hpp>
#include <corows/log.hpp>
#include <corows/metrics.hpp>
#include <corows/options.hpp>
#include <corows/websocket.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace corows {

/// Settings of a server.
struct server_options {
    /// The defaults below (declared, as options' is, for g++ 12's sake).
    server_options() = default;

    /// Every connection's settings.
    options connection{};
    /// Threads that run the server, each with its own io_context; 0 counts as 1.
    std::size_t threads = 1;
    /// With several threads on Linux: each thread accepts on its own socket bound to the
    /// same port (SO_REUSEPORT; the kernel spreads connections). Off, or elsewhere (Windows,
    /// macOS): one acceptor hands accepted sockets to the threads in turn. SO_REUSEPORT also
    /// lets another process of the same user bind the port; turn it off where that matters.
    bool reuse_port = true;
    /// Length of the kernel's queue of connections not yet accepted.
    int backlog = asio::socket_base::max_listen_connections;
    /// Open connections (from accept to close, handshakes included) beyond which a new one
    /// is answered 503 with Retry-After (plain TCP; a TLS server just closes it). 0: the
    /// descriptor limit (RLIMIT_NOFILE's soft limit when run() starts) less a reserve of a
    /// tenth, at least 32, for the refusals and the process's own files; on Windows, which
    /// has no descriptor limit, 16384 less that reserve (14746), a bound on memory.
    std::size_t max_connections = 0;
    /// Connections (from accept to close, handshakes included) from one remote address beyond
    /// which a new one is answered 429 at accept, before it takes a handshake slot. IPv6 peers
    /// count by their /64, IPv4-mapped ones as IPv4. 0 (the default): no limit, because behind
    /// a reverse proxy or a NAT every client shares one address; set it where clients connect
    /// directly. A Unix server has no addresses: no limit.
    std::size_t max_connections_per_address = 0;
    /// Connections in their opening handshake at once: from accept until the WebSocket opens
    /// or the request is refused; with run_http(), until the handler accepts, refuses, answers
    /// with write_response(), or returns. Accepting never pauses: a new connection beyond it
    /// sheds (aborts) the handshake of its thread that has waited longest, if that one is at
    /// least a second old (else the newcomer counts beyond the limit, so that a burst of
    /// honest clients is not shed), and whatever its age at twice the limit
    /// (basic_server::shed() counts them): squatters cannot keep honest clients waiting.
    /// 0: no limit. All of a handshake, TLS included, must end within
    /// connection.handshake_timeout from accept.
    std::size_t max_handshakes = 512;
    /// Grace period of stop() without an argument.
    std::chrono::milliseconds stop_timeout{5'000};
    /// Called with each exception that escapes a connection handler (on that connection's
    /// thread, so possibly from several threads at once). error::closed, the normal end of a
    /// connection whose peer left during a write, is not reported.
    std::function<void(std::exception_ptr)> on_error{};
    /// run() and run_events(): called with each valid upgrade request, on its connection's
    /// thread, before the 101; its answer can give the connection its own settings,
    /// subprotocol and response fields, or refuse it with an HTTP status. Unset: every valid
    /// request is accepted with `connection`. An exception from it refuses the request with
    /// 500 and goes to on_error. (run_http()'s handler decides with accept(req, decision).)
    upgrade_decider on_upgrade{};
    /// What the server logs (connections opened at debug, ended at info, refusals at info, or
    /// warning under a limit, protocol violations at warning with their RFC section), and
    /// where: silent by default. See docs/metrics.md, "Logs".
    log_options log{};
};

/// How stop(drain_options) empties a server for a rolling restart behind a load balancer.
struct drain_options {
    /// How long draining() is true before the first close, so that a health check answering
    /// 503 from it takes the node out of the balancer. The server accepts meanwhile (the
    /// check must get through); run() and run_events() refuse upgrade requests with 503.
    std::chrono::milliseconds notice{0};
    /// Then accepting stops, and each open connection is closed at a random moment of this
    /// window, so that its client's reconnect does not reach the other nodes with all others.
    std::chrono::milliseconds window{10'000};
    /// The close code: 1012 (Service Restart, RFC 6455's registry); 1001 also fits.
    std::uint16_t code = 1012;
    /// The close reason (cut to 123 bytes).
    std::string reason = "service restart";
    /// After the window, how long the close handshakes may take before the rest are aborted.
    std::chrono::milliseconds grace{5'000};
};

/// A WebSocket server over `Stream` (asio::ip::tcp::socket, or asio::ssl::stream<tcp::socket>
/// with a stream factory that adds the TLS context: the server then does the TLS handshake;
/// or asio::local::stream_protocol::socket, a Unix domain socket: see unix_server).
///
/// Each thread runs its own io_context; a connection lives on one of them from accept to
/// close, so its handler needs no strand. run() blocks until stop() has finished.
///
///     corows::server srv(opts);
///     srv.listen({asio::ip::make_address("127.0.0.1"), 9001});
///     srv.run([](corows::websocket<asio::ip::tcp::socket>& ws) -> asio::awaitable<void> {
///         corows::message m;
///         while (co_await ws.read_message(m)) co_await ws.write_message(m);
///     });
template <class Stream>
class basic_server {
public:
    /// The websocket handlers receive (one per connection).
    using websocket_type = websocket<Stream>;
    /// The old name of websocket_type.
    using connection_type [[deprecated("use websocket_type")]] = websocket_type;
    /// A coroutine run once per connection; the connection ends when it returns.
    using handler_type = std::function<asio::awaitable<void>(websocket_type&)>;
    /// The transport: asio::ip::tcp, or asio::local::stream_protocol under a Unix server.
    using protocol_type = typename Stream::lowest_layer_type::protocol_type;
    /// An accepted socket, before stream_factory makes a Stream of it.
    using socket_type = typename protocol_type::socket;
    /// What listen() binds to: an address and port, or a socket file's path.
    using endpoint_type = typename protocol_type::endpoint;
    /// Makes a Stream from an accepted socket (e.g. wraps it in TLS).
    using stream_factory = std::function<Stream(socket_type)>;

    /// The callbacks of run_events() (see corows::event_handlers). An exception from one is
    /// reported to server_options::on_error (unless on_error is set here) and closes its
    /// connection with 1011.
    using event_handlers = corows::event_handlers<Stream>;

    /// A server over plain sockets (TCP, or Unix domain) with `opts`.
    explicit basic_server(server_options opts)
        requires std::is_same_v<Stream, socket_type>
        : basic_server(std::move(opts), [](socket_type s) { return s; }) {}

    /// A server over plain sockets: `connection` options, `threads` threads.
    basic_server(const options& connection, std::size_t threads)
        requires std::is_same_v<Stream, socket_type>
        : basic_server(make_options(connection, threads)) {}

    /// A server whose streams `make_stream` builds from accepted sockets.
    basic_server(server_options opts, stream_factory make_stream);

    basic_server(const basic_server&) = delete;
    basic_server& operator=(const basic_server&) = delete;

    ~basic_server();

    /// Binds and listens on `endpoint` (port 0: any free port); returns the bound endpoint.
    /// A Unix domain socket's path must not exist (stale files are the caller's to remove);
    /// the server removes its socket files when it is destroyed. May be called several times
    /// before run(). Throws system_error.
    endpoint_type listen(const endpoint_type& endpoint) {
        bool per_thread = per_thread_acceptors();
        std::size_t n = per_thread ? workers_.size() : 1;
        std::vector<acceptor_type> made;
        endpoint_type bound = endpoint;
        for (std::size_t i = 0; i < n; ++i) {
            acceptor_type a(workers_[i]->ctx);
            detail::open_listener(a, bound, per_thread, opts_.backlog);
            // With port 0 the first socket picks the port and the others join it.
            if (i == 0) bound = a.local_endpoint();
            made.push_back(std::move(a));
        }
        if constexpr (requires { bound.path(); }) socket_files_.emplace_back(bound.path());
        for (std::size_t i = 0; i < n; ++i) workers_[i]->acceptors.push_back(std::move(made[i]));
        return bound;
    }

    /// Runs the server until stop() completes: accepts, does the opening handshake, and calls
    /// `handler` with each open connection. The calling thread is one of the server's threads.
    /// A server runs once.
    void run(handler_type handler) { run_with(std::move(handler), false); }

    /// As run(), but `handler` gets each connection before its handshake, to route or serve
    /// plain HTTP itself: read_request(), then accept(req) or refuse(...) or write through
    /// next_layer(). TLS, when Stream has it, is already established.
    void run_http(handler_type handler) { run_with(std::move(handler), true); }
    /// The old name of run_http().
    [[deprecated("use run_http")]] void run_raw(handler_type handler) { run_http(std::move(handler)); }

    /// As run(), but each open connection is served by `handlers` instead of a coroutine (see
    /// corows::run_events): an idle connection then holds no coroutine frame.
    void run_events(event_handlers handlers) {
        if (!handlers.on_error)
            handlers.on_error = [this](websocket_type&, std::exception_ptr e) {
                if (!is_closed_error(e)) report(e);
            };
        events_ = std::make_shared<const event_handlers>(std::move(handlers));
        run_with({}, false);
    }

    /// Graceful stop, callable from any thread (a signal_set handler, a connection handler,
    /// another thread) and before run(): stops accepting, closes every open connection with
    /// 1001 (going away), and lets run() return once every handler has finished or, at the
    /// latest, `grace` after the call: then the remaining connections are aborted and their
    /// handlers abandoned (destroyed with the server). Later calls have no effect.
    void stop(std::chrono::milliseconds grace) {
        drain_options now;
        now.window = std::chrono::milliseconds(0);
        now.code = static_cast<std::uint16_t>(close_code::going_away);
        now.reason = "server shutting down";
        now.grace = grace;
        stop_with(std::move(now));
    }
    /// stop() with server_options::stop_timeout as the grace period.
    void stop() { stop(opts_.stop_timeout); }
    /// Draining stop, from any thread: draining() at once, then after `d.notice` no more
    /// accepting and the open connections closed with `d.code` spread over `d.window`; as
    /// stop(grace) from there, `d.grace` after the window. Later stop calls have no effect.
    /// Throws std::invalid_argument for a code a close frame cannot carry.
    void stop(const drain_options& d) {
        if (!is_sendable_close_code(d.code)) throw std::invalid_argument("corows::drain_options: bad close code");
        stop_with(d);
    }
    /// True from the first stop call on, on any thread: what a health check answers 503 to.
    bool draining() const noexcept { return stop_requested_.load(std::memory_order_relaxed); }

    /// Number of threads (and io_contexts).
    std::size_t threads() const noexcept { return workers_.size(); }
    /// The io_context of thread `i` (0 is the thread that calls run()).
    asio::io_context& context(std::size_t i) { return workers_.at(i)->ctx; }
    /// The executor of thread 0, e.g. for an asio::signal_set that calls stop().
    asio::io_context::executor_type get_executor() noexcept { return workers_[0]->ctx.get_executor(); }
    /// The settings given at construction.
    const server_options& get_options() const noexcept { return opts_; }
    /// Connections aborted in their opening handshake so far to give its slot to a newer one
    /// (server_options::max_handshakes); from any thread.
    std::size_t shed() const noexcept { return shed_.load(std::memory_order_relaxed); }
    /// What the server did since run() began: accepts, refusals by reason, handshakes (TLS
    /// ones too), and its WebSockets' openings, endings by cause and code, messages, frames,
    /// bytes, pings and the bytes queued now, summed over its threads. From any thread once
    /// run() has begun (write_prometheus() formats it).
    server_metrics metrics() const noexcept;

private:
    using acceptor_type = typename protocol_type::acceptor;
    struct session;

    // Everything one thread owns. Member order matters: acceptors and timers are declared
    // after the io_context they use (so destroyed before it), and the registry before it, so
    // that it outlives the abandoned coroutines that unregister from it as they are destroyed.
    struct worker {
        // Connections of this thread, from accept to handler end: a list through the
        // connections themselves, so registering one allocates nothing. Those holding a
        // handshake slot come first, oldest first, up to held_last: shedding takes `first`.
        session* first = nullptr;
        session* last = nullptr;
        session* held_last = nullptr;
        std::size_t live = 0;
        std::atomic<std::size_t> holding{0}; // slots held here, read by other threads' shedding
        // Before the io_context: abandoned connections destroyed with it take their queued
        // bytes off these counts.
        detail::server_counters counts; // written on this thread only
        asio::io_context ctx{1};
        std::vector<acceptor_type> acceptors;
        detail::close_at_deadline deadline{ctx.get_executor()}; // a drain's end: cut the rest
        asio::steady_timer tick{ctx}; // a drain's notice, then its window's ticks
        std::minstd_rand jitter{detail::jitter_seed()};
        detail::drain_schedule<std::weak_ptr<session>> closing; // open connections at the stop
        std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
        int accepting = 0;     // accept loops running on this thread
        bool stopping = false; // stop has reached this thread
        bool finished = false; // this thread's run() is over or about to be
        std::size_t refusing = 0; // 503/429 answers being written
        const log_options* log = nullptr; // the server's
        detail::log_limiter limiter{0, 0}; // this thread's records

        // True if a record of `l` is made (format it only then).
        bool logs(log_level l) const noexcept { return log && log->enabled(l); }
        // Hands a record to the sink, within this thread's rate limit.
        void write_log(log_level l, log_category c, std::uint32_t id, std::string_view peer,
                       std::string_view message) noexcept {
            if (!logs(l)) return;
            log_record r;
            if (!limiter.admit(c, std::chrono::steady_clock::now(), r.suppressed)) return;
            r.level = l;
            r.category = c;
            r.connection = id;
            r.peer = peer;
            r.message = message;
            try {
                log->sink(r);
            } catch (...) {
                // A failing sink must not take a server thread down.
            }
        }

        // Ends this thread's run() once stopping and nothing of the server is left.
        void maybe_finish() {
            if (stopping && !finished && live == 0 && accepting == 0) finish();
        }
        void finish() {
            finished = true;
            deadline.disarm();
            tick.cancel();
            work.reset();
            // Anything else still queued (the user's signal_set, say) must not keep run() going.
            ctx.stop();
        }
    };

    // The server's record of one connection (its websocket, its thread, its admission slot);
    // it stays registered with its thread, and counted by the admission, while anyone holds
    // it. It is made holding the handshake slot its serve() took.
    struct session : std::enable_shared_from_this<session> {
        session(Stream s, std::shared_ptr<const options> o, worker& w, detail::admission& a, std::string addr,
                std::string peer_name, std::uint32_t number)
            : ws(std::move(s), std::move(o)), owner(&w), admitted(&a),
              names(addr.empty() && peer_name.empty()
                        ? nullptr
                        : std::make_unique<const session_names>(session_names{std::move(addr), std::move(peer_name)})),
              id(number) {
            ws.count_into(w.counts.connections);
            link_after(w.held_last);
            w.held_last = this;
            holds_slot = true;
            owner->holding.fetch_add(1, std::memory_order_relaxed);
            ++w.live;
        }
        session(const session&) = delete;
        session& operator=(const session&) = delete;
        ~session() {
            if (ws.has_opened() && owner->logs(log_level::warning)) log_ending();
            if (leave_slot()) admitted->end_handshake();
            admitted->release(names ? names->key : std::string());
            unlink();
            --owner->live;
            owner->maybe_finish();
        }

        // Gives up the handshake slot (true if it held one): moves behind the holders. The
        // caller uncounts it, or hands it to a newer connection.
        bool leave_slot() noexcept {
            if (!holds_slot) return false;
            holds_slot = false;
            owner->holding.fetch_sub(1, std::memory_order_relaxed);
            if (owner->held_last == this) owner->held_last = prev;
            unlink();
            link_after(owner->last);
            return true;
        }

        /// The peer's address for the per-address limit, and as the logs show it.
        struct session_names {
            std::string key;  ///< the admission's; empty without a per-address limit
            std::string peer; ///< "address:port"; empty while nothing is logged
        };

        std::string_view peer() const noexcept { return names ? std::string_view(names->peer) : std::string_view(); }

        websocket_type ws;
        worker* owner;
        session* prev = nullptr;
        session* next = nullptr;
        detail::admission* admitted;
        std::unique_ptr<const session_names> names; // none without a per-address limit or logs
        std::uint32_t id;             // the connection's number on the server, for the logs
        bool holds_slot = false;
        bool refusal_counted = false; // shed: its failing handshake is not counted again

    private:
        // How the WebSocket ended, for the logs: a violation as a protocol record.
        void log_ending() noexcept {
            try {
                const close_info why = ws.closed_why();
                if (why.by == ended_by::error) {
                    if (!owner->logs(log_level::warning)) return;
                    std::string m = "protocol error: " + why.error.message();
                    if (auto section = rfc_section(why.error); !section.empty()) m += " (" + std::string(section) + ")";
                    m += "; closed with " + std::to_string(why.code);
                    owner->write_log(log_level::warning, log_category::protocol, id, peer(), m);
                    return;
                }
                if (!owner->logs(log_level::info)) return;
                owner->write_log(log_level::info, log_category::connection, id, peer(),
                                 why.describe() + " [" + to_string(why.by) + "]");
            } catch (...) {
                // Out of memory for a log line: the connection goes all the same.
            }
        }

        void link_after(session* after) noexcept {
            prev = after;
            next = after ? after->next : owner->first;
            (prev ? prev->next : owner->first) = this;
            (next ? next->prev : owner->last) = this;
        }
        void unlink() noexcept {
            (prev ? prev->next : owner->first) = next;
            (next ? next->prev : owner->last) = prev;
            prev = next = nullptr;
        }
    };

    static server_options make_options(const options& connection, std::size_t threads) {
        server_options o;
        o.connection = connection;
        o.threads = threads;
        return o;
    }

    bool per_thread_acceptors() const noexcept {
        return detail::is_tcp<protocol_type> && detail::reuse_port_balances && opts_.reuse_port &&
               workers_.size() > 1;
    }

    void report(std::exception_ptr e) noexcept {
        if (!e || !opts_.on_error) return;
        try {
            opts_.on_error(e);
        } catch (...) {
            // The reporter failing must not take a server thread down.
        }
    }

    void run_with(handler_type handler, bool raw);

    void run_worker(worker& w) noexcept {
        for (;;) {
            try {
                w.ctx.run();
                return;
            } catch (...) {
                report(std::current_exception());
            }
        }
    }

    // Accepts without pause, whatever the handshakes in progress: a connection left in the
    // kernel's queue cannot be told from a squatter, one accepted can (see take_slot()).
    asio::awaitable<void> accept_loop(acceptor_type& acceptor, worker& w, std::size_t index) {
        struct accepting_guard {
            worker& w;
            ~accepting_guard() {
                --w.accepting;
                w.maybe_finish();
            }
        } guard{w};
        std::size_t next = index;
        for (;;) {
            if (w.stopping || !acceptor.is_open()) break;
            worker& target = per_thread_acceptors() ? w : *workers_[next++ % workers_.size()];
            error_code ec;
            socket_type sock = co_await acceptor.async_accept(
                asio::any_io_executor(target.ctx.get_executor()), asio::redirect_error(asio::use_awaitable, ec));
            if (w.stopping || !acceptor.is_open()) break;
            if (!ec) w.counts.accepted.add();
            if (ec) {
                // Out of descriptors or memory, accepting again at once would spin: pause.
                if (ec != asio::error::connection_aborted) {
                    asio::steady_timer pause(w.ctx, std::chrono::milliseconds(50));
                    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                }
                continue;
            }
            std::string address;
            if (admission_->limits().per_address != 0) {
                address = detail::peer_address(sock, ec);
                if (ec) continue; // gone already
            }
            switch (admission_->admit(address)) {
            case detail::refusal::none: break;
            case detail::refusal::connections:
                refuse_at_accept(std::move(sock), w, target, refusal_reason::connection_limit, 503, "max_connections",
                                 admission_->limits().connections);
                continue;
            case detail::refusal::per_address:
                refuse_at_accept(std::move(sock), w, target, refusal_reason::address_limit, 429,
                                 "max_connections_per_address", admission_->limits().per_address);
                continue;
            }
            // The peer's name only where a record could show it (one getpeername() otherwise saved).
            std::string peer = w.logs(log_level::info) ? detail::peer_name(sock) : std::string();
            asio::co_spawn(target.ctx,
                           serve(std::move(sock), target, std::move(address), std::move(peer), clock_type::now()),
                           [this](std::exception_ptr e) { report(e); });
        }
    }

    using clock_type = std::chrono::steady_clock;

    // A handshake younger than this is not shed while fewer than twice max_handshakes are in
    // progress: a burst of honest clients (a reconnect storm over a long round trip, or one
    // process opening many connections before it writes any request) has its requests a
    // round trip or a scheduling turn behind its connects, and must not be taken for squatters.
    static constexpr std::chrono::milliseconds shed_age{1000};

    // True if `c`'s slot may go to a newer connection: its handshake is over (a raw handler
    // answered), or has run for shed_age, or the handshakes in progress reached the hard cap.
    bool sheddable(const session& c, clock_type::time_point now) const noexcept {
        const auto deadline = c.ws.handshake_deadline();
        if (deadline == clock_type::time_point::max()) return true;
        if (admission_->handshaking() >= 2 * admission_->limits().handshakes) return true;
        return now >= deadline - opts_.connection.handshake_timeout + shed_age;
    }

    // On `w`'s thread, for a connection about to be made there: counts its handshake. With
    // every slot taken, the oldest handshake of this thread hands over its slot and is
    // aborted (unless it ended meanwhile: a run_http() handler that answered, say), once it is
    // sheddable(); a younger one keeps its slot and the newcomer counts beyond the limit.
    // Squatters are accepted first and so shed first, while an honest handshake, done in a
    // round trip, is shed only if it is still waiting for its request after shed_age and
    // max_handshakes newer connections.
    void take_slot(worker& w) {
        if (admission_->try_begin_handshake()) return;
        const auto now = clock_type::now();
        if (w.first && w.first->holds_slot && sheddable(*w.first, now)) {
            shed_oldest(w);
            return;
        }
        // Count one beyond the limit, and have the thread holding the most give one back, if
        // its oldest may go.
        admission_->begin_handshake();
        worker* most = nullptr;
        for (auto& o : workers_)
            if (!most || o->holding.load(std::memory_order_relaxed) > most->holding.load(std::memory_order_relaxed))
                most = o.get();
        if (most && most != &w && most->holding.load(std::memory_order_relaxed) != 0)
            asio::post(most->ctx, [this, most] {
                if (!most->finished && most->first && most->first->holds_slot &&
                    sheddable(*most->first, clock_type::now())) {
                    shed_oldest(*most);
                    admission_->end_handshake();
                }
            });
    }

    // On `w`'s thread: the oldest holder of a slot gives it up (to the caller, who counts it
    // anew or not), aborted if its handshake was still going on.
    void shed_oldest(worker& w) {
        auto old = w.first->shared_from_this();
        old->leave_slot();
        if (!old->ws.handshake_bounded()) return;
        shed_.fetch_add(1, std::memory_order_relaxed);
        w.counts.refuse(refusal_reason::handshake_shed);
        old->refusal_counted = true;
        if (w.logs(log_level::warning))
            w.write_log(log_level::warning, log_category::refusal, old->id, old->peer(),
                        "refused: handshake_shed (its handshake's slot went to a newer connection: max_handshakes)");
        old->ws.abort();
    }

    // On `c`'s thread: its handshake ended; the slot goes back to the count.
    void release_slot(session& c) noexcept {
        if (c.leave_slot()) admission_->end_handshake();
    }

    // Counts, logs (as a warning: the setting `limit` was reached at `value`; formatted only
    // when logged, since a flood comes this way) and answers a connection over a limit.
    void refuse_at_accept(socket_type sock, worker& w, worker& target, refusal_reason r, int status,
                          const char* limit, std::size_t value) {
        w.counts.refuse(r);
        if (w.logs(log_level::warning))
            w.write_log(log_level::warning, log_category::refusal, 0, detail::peer_name(sock),
                        std::string("refused: ") + to_string(r) + " (" + limit + " " + std::to_string(value) + ")");
        refuse_connection(std::move(sock), target, status);
    }

    // Answers a connection over a limit and closes it, without reading its request. Plain TCP
    // gets the HTTP status; a TLS server cannot answer before its handshake and just closes.
    void refuse_connection(socket_type sock, worker& w, int status) {
        constexpr bool plain = std::is_same_v<Stream, socket_type>;
        // Beyond a few answers in flight per thread (a flood), closing at once is cheaper.
        if (!plain || w.refusing >= 64) return;
        ++w.refusing;
        asio::co_spawn(w.ctx, detail::answer_and_close(std::move(sock), status), [wp = &w](std::exception_ptr) {
            --wp->refusing;
        });
    }

    static bool is_closed_error(std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const system_error& x) {
            return x.code() == error::closed;
        } catch (...) {
            return false;
        }
    }

    asio::awaitable<void> serve(socket_type sock, worker& w, std::string address, std::string peer,
                                clock_type::time_point accepted) {
        // The connection holds its handshake slot until its handshake ends (release_slot), it
        // is shed, or it is destroyed.
        take_slot(w);
        auto c = std::make_shared<session>(make_stream_(std::move(sock)), connection_opts_, w, *admission_,
                                           std::move(address), std::move(peer),
                                           next_id_.fetch_add(1, std::memory_order_relaxed) + 1);
        // One deadline from accept for the TLS handshake, the upgrade, and a raw handler's
        // decision: the connection's own timer enforces it in every phase.
        const auto limit = opts_.connection.handshake_timeout;
        c->ws.bound_handshake(limit.count() > 0 ? accepted + limit : clock_type::time_point::max());
        // Whoever accepts (this coroutine, or a run_http() handler), the open counts its time.
        c->ws.count_handshake_from(accepted);
        if (w.stopping) {
            count_refusal(*c, refusal_reason::draining);
            co_return;
        }
        if constexpr (requires(Stream& s) { s.async_handshake(Stream::server, asio::use_awaitable); }) {
            error_code ec;
            co_await c->ws.next_layer().async_handshake(Stream::server, asio::redirect_error(asio::use_awaitable, ec));
            if (!ec) {
                w.counts.tls_handshakes.add();
            } else if constexpr (requires(const Stream& s) { s.alert_sent(); }) {
                w.counts.tls_failed(c->ws.next_layer().alert_sent());
            } else {
                w.counts.tls_failed(-1);
            }
            if (ec || w.stopping) {
                // Our deadline cut it if the connection ended without the peer's doing.
                const auto why = c->ws.closed_why();
                count_refusal(*c, w.stopping                  ? refusal_reason::draining
                                  : why.ended() && !why.remote ? refusal_reason::handshake_timeout
                                                               : refusal_reason::tls,
                              ec);
                co_return;
            }
        }
        if (!raw_) {
            auto [ec] = co_await c->ws.accept(decide_, use_tuple);
            if (ec) {
                // Refused (the client got its HTTP answer), timed out, or gone.
                count_refusal(*c, detail::refusal_for(ec, draining()), ec);
                co_return;
            }
            if (w.logs(log_level::debug)) {
                std::string m = "opened";
                if (!c->ws.subprotocol().empty()) m += ", subprotocol " + std::string(c->ws.subprotocol());
                if (c->ws.deflate()) m += ", permessage-deflate";
                w.write_log(log_level::debug, log_category::connection, c->id, c->peer(), m);
            }
            // The accept decision has read what it needed of the TLS connection; OpenSSL's
            // own state is not needed for the records after it. A raw handler, which routes
            // on the request itself, decides that for itself.
            if constexpr (requires(Stream& s) { s.release_openssl(); }) c->ws.next_layer().release_openssl();
            release_slot(*c);
        }
        if (events_) {
            // The driver holds the connection (through its websocket) until on_close returns.
            auto& ws = c->ws;
            corows::run_events(std::shared_ptr<websocket_type>(std::move(c), &ws), events_);
            co_return;
        }
        // The handler runs as a coroutine of its own, not inside this one: this frame and the
        // handshake's are gone while the connection lives, and an idle connection holds only
        // the handler's frames.
        auto& ws = c->ws;
        detail::launch_handler(asio::any_io_executor(w.ctx.get_executor()), [this, &ws] { return handler_(ws); },
                               [this, c = std::move(c)](std::exception_ptr failure) mutable {
                                   handler_done(std::move(c), failure);
                               });
    }

    // On `c`'s thread: counts (and logs) its handshake's failure, `ec`, unless shedding did.
    static void count_refusal(session& c, refusal_reason r, error_code ec = {}) noexcept {
        if (std::exchange(c.refusal_counted, true)) return;
        worker& w = *c.owner;
        w.counts.refuse(r);
        // A client that leaves, or a stop, is ordinary; an invalid request is worth a line.
        const log_level level = r == refusal_reason::abandoned || r == refusal_reason::draining ? log_level::debug
                                                                                               : log_level::info;
        if (!w.logs(level)) return;
        try {
            std::string m = std::string("refused: ") + to_string(r);
            if (ec) m += ": " + ec.message();
            if (auto section = rfc_section(ec); !section.empty()) m += " (" + std::string(section) + ")";
            w.write_log(level, log_category::refusal, c.id, c.peer(), m);
        } catch (...) {
        }
    }

    // A handler that returns or throws is done with its connection: close it properly.
    void handler_done(std::shared_ptr<session> c, std::exception_ptr failure) {
        release_slot(*c); // a raw handler that returned without accepting
        if (failure && !is_closed_error(failure)) report(failure);
        if (!c->ws.is_open()) return;
        auto code = failure ? close_code::internal_error : close_code::normal;
        auto& ctx = c->owner->ctx;
        asio::co_spawn(ctx, close_connection(std::move(c), static_cast<std::uint16_t>(code), {}), asio::detached);
    }

    static asio::awaitable<void> close_connection(std::shared_ptr<session> c, std::uint16_t code,
                                                  std::string reason) {
        co_await c->ws.close(code, reason, use_tuple); // how it ends is the connection's business
    }

    // The live connections of `w`, held so that acting on one cannot end another's life
    // under the loop.
    static std::vector<std::shared_ptr<session>> snapshot(worker& w) {
        std::vector<std::shared_ptr<session>> held;
        held.reserve(w.live);
        for (session* c = w.first; c; c = c->next)
            if (auto p = c->weak_from_this().lock()) held.push_back(std::move(p));
        return held;
    }

    using plan_ptr = std::shared_ptr<const drain_options>;

    // stop(grace) is a drain without notice or window: one path for both.
    void stop_with(drain_options d);

    // Runs on `w`'s thread: the notice, during which `w` accepts as before (decide_ refuses).
    void begin_drain(worker& w, plan_ptr plan) {
        if (w.stopping || w.finished) return;
        if (plan->notice.count() <= 0) return begin_stop(w, std::move(plan));
        w.tick.expires_after(plan->notice);
        w.tick.async_wait([this, wp = &w, plan = std::move(plan)](error_code ec) mutable {
            if (!ec && !wp->finished) begin_stop(*wp, std::move(plan));
        });
    }

    // Runs on `w`'s thread.
    void begin_stop(worker& w, plan_ptr plan) {
        if (w.stopping || w.finished) return;
        w.stopping = true;
        for (auto& a : w.acceptors) {
            error_code ignored;
            a.close(ignored);
        }
        // Open connections get a close handshake, in turn over the window; ones still in
        // their opening handshake (or serving plain HTTP in run_http) are cut.
        std::vector<std::weak_ptr<session>> open;
        for (auto& c : snapshot(w)) {
            if (c->ws.is_open()) open.push_back(c);
            else c->ws.abort();
        }
        auto start = std::chrono::steady_clock::now();
        w.closing = {std::move(open), start, plan->window, w.jitter};
        w.deadline.arm(start + plan->window + plan->grace, [wp = &w] {
            if (wp->finished) return;
            for (auto& c : snapshot(*wp)) c->ws.abort();
            // Let the aborted operations' completions run once, then give up on the rest.
            asio::post(wp->ctx, [wp] {
                if (!wp->finished) wp->finish();
            });
        });
        close_due(w, std::move(plan));
        w.maybe_finish();
    }

    // Runs on `w`'s thread: closes the window's shares that are due, then waits for the next.
    static void close_due(worker& w, plan_ptr plan) {
        auto now = std::chrono::steady_clock::now();
        while (!w.finished && !w.closing.done() && w.closing.due() <= now) {
            for (auto& weak : w.closing.take()) {
                // Not held any longer: a weak_ptr keeps make_shared's whole block.
                auto c = std::exchange(weak, {}).lock();
                // One that ended, or began its own close, meanwhile needs nothing.
                if (c && c->ws.is_open())
                    asio::co_spawn(w.ctx, close_connection(std::move(c), plan->code, plan->reason), asio::detached);
            }
        }
        if (w.finished || w.closing.done()) return;
        w.tick.expires_at(w.closing.due());
        w.tick.async_wait([wp = &w, plan = std::move(plan)](error_code ec) mutable {
            if (!ec && !wp->finished) close_due(*wp, std::move(plan));
        });
    }

    server_options opts_;
    std::shared_ptr<const options> connection_opts_; // one copy for every connection
    stream_factory make_stream_;
    handler_type handler_;
    std::shared_ptr<const event_handlers> events_; // run_events() only
    upgrade_decider decide_; // 503 while draining, else opts_.on_upgrade, its exceptions reported
    bool raw_ = false;
    std::unique_ptr<detail::admission> admission_; // made by run(); outlives the workers' connections
    std::atomic<bool> started_{false};
    std::atomic<bool> admitting_{false}; // admission_ is made: metrics() may read it
    std::atomic<std::uint32_t> next_id_{0}; // the last connection's number
    std::atomic<bool> stop_requested_{false};
    std::atomic<std::size_t> shed_{0};
    std::vector<detail::socket_file> socket_files_; // listen()'s Unix socket files, removed last
    std::vector<std::unique_ptr<worker>> workers_;
};

template <class Stream>
basic_server<Stream>::basic_server(server_options opts, stream_factory make_stream)
    : opts_(std::move(opts)),
      connection_opts_(std::make_shared<const options>(opts_.connection)),
      make_stream_(std::move(make_stream)) {
    if (opts_.threads == 0) opts_.threads = 1;
    for (std::size_t i = 0; i < opts_.threads; ++i) {
        workers_.push_back(std::make_unique<worker>());
        workers_.back()->log = &opts_.log;
        workers_.back()->limiter = detail::log_limiter(opts_.log.per_second, opts_.log.burst);
    }
    // Every upgrade passes here: a client the balancer sent before it saw the health
    // check fail must go elsewhere, whatever on_upgrade would say.
    decide_ = [this](const http_request& req) -> upgrade_answer {
        if (draining()) return upgrade_answer::refuse(503, "shutting down\n");
        if (!opts_.on_upgrade) return {};
        try {
            return opts_.on_upgrade(req);
        } catch (...) {
            report(std::current_exception());
            return upgrade_answer::refuse(500);
        }
    };
}

template <class Stream>
basic_server<Stream>::~basic_server() {
    // Connections abandoned in the io_contexts unregister as those are destroyed; they
    // must not start a stop any more.
    for (auto& w : workers_) w->finished = true;
}

template <class Stream>
void basic_server<Stream>::run_with(handler_type handler, bool raw) {
    if (started_.exchange(true)) throw std::logic_error("corows::basic_server: run() called twice");
    handler_ = std::move(handler);
    raw_ = raw;
    detail::admission_limits limits;
    limits.connections = opts_.max_connections != 0 ? opts_.max_connections
                                                     : detail::connections_for_descriptor_limit();
    // A Unix domain socket's peers have no address to tell them apart.
    limits.per_address = detail::is_tcp<protocol_type> ? opts_.max_connections_per_address : 0;
    limits.handshakes = opts_.max_handshakes;
    admission_ = std::make_unique<detail::admission>(limits);
    admitting_.store(true, std::memory_order_release);
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        worker& w = *workers_[i];
        w.work.emplace(w.ctx.get_executor());
        for (auto& a : w.acceptors) {
            ++w.accepting;
            asio::co_spawn(w.ctx, accept_loop(a, w, i), [this](std::exception_ptr e) { report(e); });
        }
    }
    {
        // Joined on every way out of the block, as std::jthread would (libc++ 16 has none).
        struct joined_threads {
            std::vector<std::thread> threads;
            ~joined_threads() {
                for (auto& t : threads) t.join();
            }
        } others;
        for (std::size_t i = 1; i < workers_.size(); ++i)
            others.threads.emplace_back([this, w = workers_[i].get()] { run_worker(*w); });
        run_worker(*workers_[0]);
    }
    for (auto& w : workers_) w->finished = true;
}

template <class Stream>
server_metrics basic_server<Stream>::metrics() const noexcept {
    server_metrics m;
    for (const auto& w : workers_) w->counts.add_to(m);
    if (admitting_.load(std::memory_order_acquire)) m.handshakes_in_progress = admission_->handshaking();
    return m;
}

template <class Stream>
void basic_server<Stream>::stop_with(drain_options d) {
    auto plan = std::make_shared<const drain_options>(std::move(d));
    if (stop_requested_.exchange(true)) return;
    for (auto& w : workers_) asio::post(w->ctx, [this, wp = w.get(), plan] { begin_drain(*wp, plan); });
}

/// The plain-TCP server.
using server = basic_server<asio::ip::tcp::socket>;

#if COROWS_DETAIL_LIBRARY_INSTANCES
// Compiled in the library (see corows/detail/instances.hpp).
extern template class basic_server<asio::ip::tcp::socket>;
#if defined(COROWS_HAS_TLS)
extern template class basic_server<tls_stream>;
#endif
#endif

#if COROWS_HAS_UNIX_SOCKETS
/// A server on Unix domain sockets: listen() takes asio::local::stream_protocol::endpoint
/// (a path), handlers get websocket<asio::local::stream_protocol::socket>. Not on Windows,
/// where Asio has no Unix domain sockets.
using unix_server = basic_server<asio::local::stream_protocol::socket>;
#endif

} // namespace corows
