// SPDX-License-Identifier: BSL-1.0
// corows::connection: the whole protocol state of one WebSocket, sans I/O. Bytes in, events
// out, frames to send out, and time in: every rule of RFC 6455 §5-7 that is not the frame
// codec itself (answer pings, echo a close, fail with a code, time out) is decided here.
#pragma once

#include <corows/byte_buffer.hpp>
#include <corows/close_info.hpp>
#include <corows/detail/write_queue.hpp> // output_queue's old name, for one release
#include <corows/error.hpp>
#include <corows/message.hpp>
#include <corows/options.hpp>
#include <corows/prepared_message.hpp>
#include <corows/protocol/connection_counters.hpp>
#include <corows/protocol/frame.hpp>
#include <corows/protocol/message_reader.hpp>
#include <corows/protocol/message_writer.hpp>
#include <corows/protocol/output_queue.hpp>
#include <corows/protocol/permessage_deflate.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace corows {

/// Where a connection is in its life.
enum class connection_state : std::uint8_t {
    connecting, ///< the opening handshake is not done (handshake_timeout applies)
    open,       ///< messages flow both ways
    closing,    ///< a close frame went one way, the other is awaited (close_timeout applies)
    closed,     ///< the WebSocket is over: send what is queued, then close the transport
};

/// What connection::next_event() found.
enum class connection_event : std::uint8_t {
    need_more, ///< everything received is decoded: read more into receive_space()
    message,   ///< a data message is in the `message&` passed in
    ping,      ///< a ping arrived (control_payload()); its pong is queued unless closing
    pong,      ///< a pong arrived (control_payload())
    close,     ///< the peer's close frame arrived (peer_code(), peer_reason()); any reply is queued
    failed,    ///< the peer broke the protocol (error()); our close frame is queued, state() is closed
    yield,     ///< everything received is decoded and this turn's budget is spent: let other
               ///< connections run, then begin_turn() and read more
};

/// What connection::on_timer() did.
enum class timer_outcome : std::uint8_t {
    none,      ///< nothing was due yet: wait until deadline() again
    ping,      ///< a keepalive ping was queued
    timed_out, ///< a timeout expired: close the transport now (state() is closed); a send
               ///< timeout queued its 1008 close frame, which the stalled peer cannot take
};

/// One WebSocket connection's protocol state, for either role, over any transport.
///
/// The driver (websocket<Stream>, or a test with byte arrays) reads into receive_space(),
/// reports received(), and calls next_event() until need_more; it writes what
/// take_output() returns and reports output_written(); it calls on_timer() at deadline().
/// The connection never blocks, allocates only for what it holds, and owns no transport.
class connection {
public:
    /// The clock of every deadline and time the connection is given.
    using clock = std::chrono::steady_clock;

    /// Bytes received per turn (the work between two waits of the driver): once a turn has
    /// read this much, next_event() yields where it would ask for more, so one peer that keeps
    /// its socket full cannot hold the thread. What was read is decoded first: a turn never
    /// ends with bytes in the buffer, which would keep every busy connection's buffer out of
    /// the thread's pool (see docs/design.md for the measurements).
    static constexpr std::size_t turn_budget = 64 * 1024;
    /// Capacity a message's storage or the receive buffer keeps while the connection waits;
    /// more goes back to the thread's pool (or is freed) after a large message.
    static constexpr std::size_t idle_capacity = 4 * 1024;

    /// A connection with `opts`, in the connecting state.
    explicit connection(std::shared_ptr<const options> opts);
    /// Takes what it has queued off its counters' queued_output_bytes (and hands back a
    /// shared_connection_counters part).
    ~connection();

    /// Counts what this connection does into `c` (none: nullptr, the default) from now on;
    /// `c` must outlive the connection, and be written only from the thread that runs it.
    /// What it has queued moves from the counters before to `c`.
    void count_into(connection_counters* c) noexcept;
    /// Counts into a part of `c` of its own (shared_connection_counters::enlist()), so that
    /// connections on other threads may count into `c` at once; `c` must outlive it.
    void count_into(shared_connection_counters& c);
    /// The opening handshake began at `at` (a server's accept): if it opens, the time from
    /// `at` counts in the counters' handshake durations. Only while connecting.
    void count_handshake_from(clock::time_point at) noexcept {
        // last_ping_ means nothing before the connection opens; open() clears it.
        if (state_ == connection_state::connecting) last_ping_ = at;
    }
    /// Marks the connection as closed for being too slow (a hub's close policy), so that its
    /// ending counts as ended_by::slow_consumer.
    void note_slow_consumer() noexcept { slow_consumer_ = true; }

    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // ------------------------------------------------------------------ state

    /// Where the connection is in its life.
    connection_state state() const noexcept { return state_; }
    /// True once the WebSocket opened (open() was called), whether or not it has ended since.
    bool has_opened() const noexcept { return opened_; }
    /// What this connection carried so far: data messages and their payload, each way.
    const traffic_counts& traffic() const noexcept { return traffic_; }
    /// The settings given at construction, or by use_settings().
    const options& settings() const noexcept { return *opts_; }
    /// Replaces the settings while connecting (a server's decision for this one connection,
    /// before it answers the upgrade); false, changing nothing, once open or for nullptr.
    bool use_settings(std::shared_ptr<const options> opts) noexcept {
        if (state_ != connection_state::connecting || !opts) return false;
        opts_ = std::move(opts);
        return true;
    }
    /// Our role (meaningful once open()).
    role local() const noexcept { return writer_.local(); }
    /// The negotiated subprotocol; empty if none.
    std::string_view subprotocol() const noexcept { return agreed_ ? std::string_view(agreed_->subprotocol) : ""; }
    /// The negotiated permessage-deflate parameters, if compression is on.
    const std::optional<deflate_params>& deflate() const noexcept {
        static const std::optional<deflate_params> none;
        return agreed_ ? agreed_->deflate : none;
    }

    // ------------------------------------------------------------------ opening handshake

    /// A phase of the handshake starts at `now`: handshake_timeout runs from here, but never
    /// past a deadline set by bound_handshake().
    void begin_handshake(clock::time_point now) noexcept;
    /// The whole opening handshake must be over by `at` (a server's deadline from accept, so
    /// that the TLS handshake and the upgrade share one timeout): later phases and
    /// pause_handshake() keep it, until end_handshake_bound() or open(). Only while connecting.
    void bound_handshake(clock::time_point at) noexcept {
        if (state_ != connection_state::connecting) return;
        bounded_ = true;
        timeout_at_ = at;
    }
    /// The application answered the request itself (plain HTTP): bound_handshake()'s deadline
    /// no longer applies, each later phase gets handshake_timeout of its own.
    void end_handshake_bound() noexcept { bounded_ = false; }
    /// True while bound_handshake()'s deadline binds: still connecting, not answered.
    bool handshake_bounded() const noexcept { return bounded_ && state_ == connection_state::connecting; }
    /// The deadline of bound_handshake() while it binds; time_point::max() otherwise.
    clock::time_point handshake_deadline() const noexcept {
        return handshake_bounded() ? timeout_at_ : clock::time_point::max();
    }
    /// The handshake succeeded as `r`: messages flow from now on, compressed as `params` say.
    void open(role r, std::string subprotocol, const std::optional<deflate_params>& params,
              clock::time_point now);
    /// The application decides about a request it read (a custom server's routing or
    /// authentication): no handshake timeout runs until begin_handshake() again, except the
    /// deadline of bound_handshake(), which still holds.
    void pause_handshake() noexcept {
        if (!bounded_) timeout_at_ = clock::time_point::max();
    }

    // ------------------------------------------------------------------ receiving

    /// Where the next transport read should put its bytes (valid until the next call). It
    /// starts at 4 KiB and doubles, up to 256 KiB, while reads fill it.
    std::span<std::uint8_t> receive_space();
    /// `n` bytes were read into receive_space() at `now`.
    void received(std::size_t n, clock::time_point now) noexcept;
    /// Received bytes not yet decoded (the handshake's HTTP parser reads them here).
    std::span<std::uint8_t> buffered() noexcept { return rbuf_.data().subspan(rpos_); }
    /// The first `n` of buffered() were used outside next_event() (an HTTP head).
    void consume(std::size_t n) noexcept { rpos_ += n; }
    /// Decodes received bytes up to the next event (see connection_event). A message may
    /// borrow the receive buffer until the next receive_space() call.
    connection_event next_event(message& m);
    /// The payload of the last ping or pong event (valid until the next call).
    std::span<const std::uint8_t> control_payload() const noexcept {
        return rbuf_.data().subspan(control_at_, control_size_);
    }
    /// A new turn: the driver waited or yielded since the last one.
    void begin_turn() noexcept { turn_bytes_ = 0; }
    /// The transport ended (an end of file, a reset, a failed read): without a close frame
    /// from the peer, the connection ended abnormally (1006).
    void receive_closed() noexcept;
    /// The driver is about to wait for the transport with `m` as the message it reads into
    /// (or none): buffers that only held consumed bytes go back to a small size or the
    /// thread's pool, so an idle connection holds what it held before any large message.
    /// `keep_receive_buffer`: a pending read still writes into it (a TLS stream).
    void release_idle_buffers(message* m, bool keep_receive_buffer) noexcept;
    /// The transport is readable: the next receive_space() may take a pooled buffer.
    void prepare_receive() noexcept;

    // ------------------------------------------------------------------ closing

    /// The peer's close code: 0 while none, 1005 if its close frame had none, 1006 if the
    /// transport ended (or the close timed out) without one.
    std::uint16_t peer_code() const noexcept { return peer_code_; }
    /// The peer's close reason.
    std::string_view peer_reason() const noexcept { return reasons_ ? std::string_view(reasons_->peer) : std::string_view(); }
    /// True once our close frame is queued.
    bool close_sent() const noexcept { return close_sent_; }
    /// True once the peer's close frame arrived.
    bool close_received() const noexcept { return close_received_; }
    /// True if a timeout (handshake, idle, close or send) ended the connection or the close
    /// handshake.
    bool timed_out() const noexcept { return timed_out_; }
    /// Why the connection ended: error::closed after a close handshake or a lost transport,
    /// error::timeout, error::send_timeout, or the violation that failed it. Empty while it
    /// has not ended.
    std::error_code error() const noexcept { return error_; }
    /// What operations on the ended connection report after the first: error::send_timeout
    /// or error::timeout if a timeout ended it, else error::closed.
    std::error_code closed_error() const noexcept;
    /// Why the connection ended or is ending: the first close frame (whose, its code and
    /// reason), or 1006 without one, error(), the phase it ended in (or is in) and traffic();
    /// code 0 while open.
    close_info closed_why() const;
    /// Starts the close handshake at `now`: queues our close frame (once; `code` 0 sends
    /// none, `reason` is cut to 123 bytes) and arms close_timeout. error::bad_close_code for
    /// a code that may not be sent; nothing happens once a close frame was queued.
    std::error_code start_close(std::uint16_t code, std::string_view reason, clock::time_point now);
    /// Fails the connection (RFC 6455 §7.1.7) for `why`: queues a close frame with the code
    /// close_code_for(why) unless one was sent, and closes.
    void fail(std::error_code why);

    // ------------------------------------------------------------------ sending

    /// Why a data message cannot be queued now (the first write error, or closed / timeout
    /// once our close frame is queued or the connection ended); empty if it can.
    std::error_code write_status() const noexcept;
    /// A data frame may be queued: the queue is under write_queue_limit and no direct write
    /// is part-way out.
    bool has_room() const noexcept { return !direct_ && queued() < opts_->write_queue_limit; }
    /// Reading should pause: the queue is at write_queue_limit (its peer is not reading
    /// what we send) and the close handshake has not started.
    bool reading_paused() const noexcept {
        return !close_sent_ && queued() >= opts_->write_queue_limit;
    }
    /// A message of `size` bytes goes out from the caller's memory (see begin_direct())
    /// rather than through the queue: a large, uncompressed server message.
    bool goes_direct(std::size_t size, bool compress) const noexcept;
    /// Queues a data message (compressed when negotiated, `compress` allows and the size
    /// reaches the threshold). Errors as write_status(); a compressor failure fails the
    /// connection (1011) and is returned.
    std::error_code send_message(message_kind kind, std::span<const std::uint8_t> payload, bool compress);
    /// Queues a prepared message the cheapest way this connection allows: by reference
    /// where its bytes are the ones we would send, else encoded. Errors as send_message().
    std::error_code send_prepared(const std::shared_ptr<const prepared_message>& pm);
    /// Queues a ping (payload cut to 125 bytes) at `now`. Errors as write_status().
    std::error_code send_ping(std::span<const std::uint8_t> payload, clock::time_point now);
    /// Queues an unsolicited pong. Errors as write_status().
    std::error_code send_pong(std::span<const std::uint8_t> payload);

    /// A direct write begins: data frames wait until end_direct(); control frames may go
    /// between its frames (take_output() while close_sent() is false). The driver reports
    /// its progress as a queued write's (output_progress()).
    void begin_direct() noexcept { direct_ = true; }
    /// Writes the header of a directly written frame; returns its length and, for a
    /// client, the key its payload must be masked with.
    std::size_t direct_header(std::span<std::uint8_t, max_frame_header_size> out, opcode op, bool fin,
                              std::uint64_t length, mask_key& key) {
        return writer_.frame_header_for(out, op, fin, false, length, key);
    }
    /// One frame of a direct write: its header (in the caller's buffer) and its part of the
    /// message, sent from the caller's memory after the header.
    struct direct_frame {
        std::size_t header_size = 0;           ///< bytes of the header written to `out`
        std::span<const std::uint8_t> payload; ///< the frame's payload, a prefix of `rest`
        mask_key key{};                        ///< client: the key `payload` must be masked with
    };
    /// The next frame of a direct message of `kind` whose unsent part is `rest` (advanced past
    /// the frame): the first frame has the data opcode, the others are continuations, each
    /// carries at most frame_size() bytes, and the one that empties `rest` has FIN (RFC 6455
    /// §5.4). An empty message is one empty final frame.
    direct_frame next_direct_frame(std::span<std::uint8_t, max_frame_header_size> out, message_kind kind,
                                   std::span<const std::uint8_t>& rest);
    /// Between two frames of a direct write, queued control frames go out now (take_output()):
    /// data waits for the message to end, and after our close frame nothing more is sent.
    bool controls_between_frames() const noexcept { return !pending_.empty() && !close_sent_; }
    /// The direct write is over.
    void end_direct() noexcept {
        direct_ = false;
        direct_continues_ = false;
        if (inflight_.empty()) output_done();
    }
    /// Frame payload size for fragmentation (0: none).
    std::size_t frame_size() const noexcept { return writer_.frame_size(); }

    // ------------------------------------------------------------------ output

    /// True if frames wait to be written.
    bool has_output() const noexcept { return !pending_.empty(); }
    /// What the transport should write next (everything queued so far, moved out of the
    /// queue); keep it until output_written().
    output_queue& take_output() noexcept;
    /// The last take_output() was written.
    void output_written() noexcept {
        if (auto* k = counters_) k->queued_output_bytes.subtract(inflight_.size());
        inflight_.clear();
        if (!direct_) output_done();
    }
    /// A write is under way and the transport took some of it at `now`, or the write began
    /// waiting for the transport then: output counts as stalled from `now` until more
    /// progress or output_written(), and options::send_timeout after that (while open),
    /// on_timer() ends the connection. A write the transport takes at once need not call it.
    void output_progress(clock::time_point now) noexcept;
    /// Writing failed with `ec`: nothing queued will reach the peer.
    void write_failed(std::error_code ec) noexcept;
    /// The first write error; empty if none.
    std::error_code write_error() const noexcept { return write_error_; }
    /// Memory held by frames not yet written (queued and in flight; see output_queue).
    std::size_t queued() const noexcept { return pending_.size() + inflight_.size(); }
    /// The driver is idle with nothing to write: send buffers go back to the thread's pool.
    void release_write_buffers() noexcept;

    // ------------------------------------------------------------------ time

    /// When on_timer() must next be called; time_point::max() when no timeout runs.
    clock::time_point deadline() const noexcept;
    /// Applies what is due at `now`: a keepalive ping, or a timeout (handshake, idle, close,
    /// send: the last queues a 1008 close frame and fails with error::send_timeout). Early
    /// calls do nothing.
    timer_outcome on_timer(clock::time_point now);

private:
    connection_event buffer_used_up() const noexcept;
    void note_control(std::span<const std::uint8_t> payload) noexcept;
    byte_buffer& out() noexcept;
    void queue_pong(std::span<const std::uint8_t> payload);
    void queue_close(std::uint16_t code, std::string_view reason);
    void peer_closed(const read_result& r);
    void end(std::error_code why) noexcept;
    void time_out() noexcept;
    void send_timed_out();
    void output_done() noexcept;

    // closed_why() without the reason.
    struct ending {
        std::uint16_t code = 0;
        bool remote = false;
        ended_by by = ended_by::local;
    };
    ending decided_ending() const noexcept;
    void count_end() noexcept;
    // A data message of `payload` bytes was queued as `frames` frames, `queued` bytes of queue.
    void count_sent(std::size_t payload, std::size_t frames, std::size_t queued) noexcept {
        ++traffic_.messages_sent;
        traffic_.payload_bytes_sent += payload;
        if (auto* k = counters_) {
            k->messages_sent.add();
            k->payload_bytes_sent.add(payload);
            k->frames_sent.add(frames);
            k->queued_output_bytes.add(queued);
        }
    }
    // A control frame was queued (or a pong replaced) since the queue held `queued_before`.
    void count_control(std::size_t queued_before) noexcept;

    std::shared_ptr<const options> opts_;
    connection_counters* counters_ = nullptr; // count_into()'s
    // Counted on every connection, beside the per-thread counters: close_info reports them.
    traffic_counts traffic_;
    message_reader reader_;
    message_writer writer_;

    // Small fields together: every connection carries them, idle or not.
    byte_buffer rbuf_;              // received bytes; [rpos_, size) not yet decoded
    std::size_t rpos_ = 0;
    std::uint32_t read_size_ = 4096; // bytes asked of the next transport read
    std::uint32_t turn_bytes_ = 0;   // bytes received since begin_turn()
    std::uint32_t control_at_ = 0;   // the last ping's or pong's payload in rbuf_
    std::uint32_t pong_at_ = no_pong; // where in pending_ an unsent pong starts
    std::uint8_t control_size_ = 0;
    std::uint8_t pong_size_ = 0;
    static constexpr std::uint32_t no_pong = UINT32_MAX;

    output_queue pending_;  // frames queued, not yet taken
    output_queue inflight_; // frames the transport is writing

    // What the handshake agreed on, when it agreed on anything (most connections: nothing).
    struct agreement {
        std::string subprotocol;
        std::optional<deflate_params> deflate;
    };
    std::unique_ptr<agreement> agreed_;
    // The close frames' reasons; only a close with a reason allocates them.
    struct close_reasons {
        std::string peer;
        std::string ours;
    };
    std::unique_ptr<close_reasons> reasons_;
    std::error_code error_;
    std::error_code write_error_;
    clock::time_point last_rx_{};
    clock::time_point last_ping_{};
    // The handshake or close deadline; while open, the send deadline (max() while no write
    // waits for the transport), so a stalled writer costs no field of its own.
    clock::time_point timeout_at_ = clock::time_point::max();
    std::uint16_t peer_code_ = 0;
    std::uint16_t sent_code_ = 0; // our close frame's code (1005 for none), once sent
    connection_state state_ = connection_state::connecting;
    // Bits: the flags share one byte, so sent_code_ fits in the padding that was there.
    bool close_sent_ : 1 = false;
    bool close_received_ : 1 = false;
    bool peer_closed_first_ : 1 = false; // the peer's close frame came before ours
    bool timed_out_ : 1 = false;
    bool direct_ : 1 = false;
    bool direct_continues_ : 1 = false; // a direct message's next frame is a continuation
    bool bounded_ : 1 = false; // bound_handshake()'s deadline is in timeout_at_
    bool slow_consumer_ : 1 = false; // note_slow_consumer()
    bool opened_ : 1 = false;        // open() was called
    bool upgrading_ : 1 = false;     // begin_handshake() was called: the HTTP upgrade began
    bool ended_closing_ : 1 = false; // ended after our close frame, without the peer's
};

} // namespace corows
