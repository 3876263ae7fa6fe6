// SPDX-License-Identifier: BSL-1.0
#include <corows/detail/buffer_pool.hpp>
#include <corows/message.hpp>
#include <corows/protocol/connection.hpp>
#include <corows/protocol/shared_connection_counters.hpp>

#include <algorithm>

namespace corows {
namespace {

// Largest transport read: reads start at 4 KiB (idle connections stay cheap) and double while
// they fill the space, so a large message costs few reads.
constexpr std::size_t max_read_size = 256 * 1024;

// The close reason a send timeout queues. "too slow" first, as the hub's slow-consumer close:
// both tell a peer that it did not keep up with what it was sent.
constexpr std::string_view send_timeout_reason = "too slow: send timeout";

} // namespace

connection::connection(std::shared_ptr<const options> opts)
    : opts_(std::move(opts)),
      reader_(reader_config{role::server, opts_->max_message_size}),
      writer_(writer_config{role::server, opts_->frame_size}) {}

connection::~connection() { count_into(nullptr); }

void connection::count_into(connection_counters* c) noexcept {
    if (c == counters_) return;
    // The queued-bytes gauge holds queued() for each connection counting into it.
    const std::uint64_t q = queued();
    if (auto* k = counters_) {
        k->queued_output_bytes.subtract(q);
        if (auto* whole = k->part_of()) whole->retire(*k);
    }
    counters_ = c;
    if (c) c->queued_output_bytes.add(q);
}

void connection::count_into(shared_connection_counters& c) { count_into(&c.enlist()); }

// ---------------------------------------------------------------------- opening handshake

void connection::begin_handshake(clock::time_point now) noexcept {
    upgrading_ = true;
    auto t = opts_->handshake_timeout;
    auto at = t.count() > 0 ? now + t : clock::time_point::max();
    timeout_at_ = bounded_ ? std::min(timeout_at_, at) : at;
}

void connection::open(role r, std::string subprotocol, const std::optional<deflate_params>& params,
                      clock::time_point now) {
    reader_ = message_reader(reader_config{r, opts_->max_message_size});
    writer_ = message_writer(writer_config{r, opts_->frame_size});
    if (params) {
        deflate_config cfg = make_deflate_config(*params, r, opts_->deflate);
        reader_.enable_deflate(cfg.receive);
        writer_.enable_deflate(cfg);
    }
    if (!subprotocol.empty() || params) agreed_ = std::make_unique<agreement>(agreement{std::move(subprotocol), params});
    state_ = connection_state::open;
    opened_ = true;
    if (auto* k = counters_) {
        k->opened.add();
        if (last_ping_ != clock::time_point{}) k->handshake_took(now - last_ping_);
    }
    last_ping_ = {};
    bounded_ = false;
    last_rx_ = now;
    timeout_at_ = clock::time_point::max();
}

// ---------------------------------------------------------------------- receiving

std::span<std::uint8_t> connection::receive_space() {
    // The undecoded tail moves to the front once per read, not once per frame.
    if (rpos_ == rbuf_.size()) {
        rbuf_.clear();
        if (rbuf_.capacity() > 2 * max_read_size) rbuf_ = byte_buffer{};
    } else if (rpos_ > 0) {
        rbuf_.consume(rpos_);
    }
    rpos_ = 0;
    if (rbuf_.capacity() == 0) detail::buffer_pool::reads().take(rbuf_);
    return rbuf_.prepare(read_size_);
}

void connection::received(std::size_t n, clock::time_point now) noexcept {
    // A read that filled all the space it was offered asks for twice as much next time.
    if (n >= rbuf_.capacity() - rbuf_.size() && read_size_ < max_read_size) read_size_ *= 2;
    rbuf_.commit(n);
    if (auto* k = counters_; k && state_ != connection_state::connecting) k->wire_bytes_received.add(n);
    turn_bytes_ = static_cast<std::uint32_t>(std::min<std::size_t>(turn_bytes_ + n, turn_budget));
    if (n) last_rx_ = now;
}

connection_event connection::next_event(message& m) {
    for (;;) {
        if (rpos_ == rbuf_.size()) return buffer_used_up();
        if (close_received_ || state_ == connection_state::closed || state_ == connection_state::connecting) {
            // Nothing after the peer's close frame means anything (RFC 6455 §5.5.1).
            rpos_ = rbuf_.size();
            return buffer_used_up();
        }
        read_result r = reader_.read(rbuf_.data(), rpos_, m);
        switch (r.event) {
        case read_event::need_more:
            return buffer_used_up();
        case read_event::progress:
            if (r.frame_ended && counters_) counters_->frames_received.add();
            continue;
        case read_event::message:
            ++traffic_.messages_received;
            traffic_.payload_bytes_received += m.size();
            if (auto* k = counters_) {
                k->messages_received.add();
                k->payload_bytes_received.add(m.size());
                k->frames_received.add();
            }
            return connection_event::message;
        case read_event::ping:
            if (auto* k = counters_) {
                k->pings_received.add();
                k->frames_received.add();
            }
            note_control(r.payload);
            if (!close_sent_) queue_pong(r.payload);
            return connection_event::ping;
        case read_event::pong:
            if (auto* k = counters_) {
                k->pongs_received.add();
                k->frames_received.add();
            }
            note_control(r.payload);
            return connection_event::pong;
        case read_event::close:
            if (counters_) counters_->frames_received.add();
            peer_closed(r);
            return connection_event::close;
        case read_event::failed:
            fail(r.ec);
            return connection_event::failed;
        }
    }
}

void connection::note_control(std::span<const std::uint8_t> payload) noexcept {
    control_at_ = static_cast<std::uint32_t>(payload.data() - rbuf_.data().data());
    control_size_ = static_cast<std::uint8_t>(payload.size());
}

connection_event connection::buffer_used_up() const noexcept {
    return turn_bytes_ >= turn_budget ? connection_event::yield : connection_event::need_more;
}

void connection::receive_closed() noexcept {
    if (state_ != connection_state::connecting && !close_received_)
        peer_code_ = static_cast<std::uint16_t>(close_code::abnormal);
    end(error::closed);
}

void connection::release_idle_buffers(message* m, bool keep_receive_buffer) noexcept {
    if (!keep_receive_buffer && rpos_ == rbuf_.size()) {
        rbuf_.clear();
        rpos_ = 0;
        detail::buffer_pool::reads().give(rbuf_);
    }
    if (m && !reader_.in_message()) detail::message_access::release(*m, idle_capacity);
}

// ---------------------------------------------------------------------- closing

void connection::peer_closed(const read_result& r) {
    close_received_ = true;
    peer_closed_first_ = !close_sent_;
    peer_code_ = r.code;
    if (!r.reason.empty()) {
        if (!reasons_) reasons_ = std::make_unique<close_reasons>();
        reasons_->peer = std::string(r.reason);
    }
    if (!close_sent_) {
        // Echo the peer's code (RFC 6455 §5.5.1); a close without a code gets none.
        bool has_code = r.code != static_cast<std::uint16_t>(close_code::no_status);
        queue_close(has_code ? r.code : 0, {});
    }
    // Both close frames are known. The server closes TCP first (§7.1.1); the client waits
    // for that, within the close timeout.
    auto t = opts_->close_timeout;
    timeout_at_ = t.count() > 0 ? last_rx_ + t : clock::time_point::max();
    if (local() == role::server) end(error::closed);
    else state_ = connection_state::closing;
}

std::error_code connection::start_close(std::uint16_t code, std::string_view reason, clock::time_point now) {
    if (!may_close_with(code)) return error::bad_close_code;
    if (state_ != connection_state::open || close_sent_) return {};
    queue_close(code, reason);
    state_ = connection_state::closing;
    auto t = opts_->close_timeout;
    timeout_at_ = t.count() > 0 ? now + t : clock::time_point::max();
    return {};
}

void connection::fail(std::error_code why) {
    if (state_ == connection_state::connecting) {
        end(why);
        return;
    }
    if (!close_sent_ && state_ != connection_state::closed)
        queue_close(static_cast<std::uint16_t>(close_code_for(why)), why.message());
    // The close frame gets close_timeout to leave; nothing is awaited from the peer.
    auto t = opts_->close_timeout;
    if (state_ == connection_state::open) timeout_at_ = t.count() > 0 ? last_rx_ + t : clock::time_point::max();
    end(why);
}

void connection::end(std::error_code why) noexcept {
    const bool was_open = state_ == connection_state::open || state_ == connection_state::closing;
    // A close handshake that completed ended from the open phase; ours unanswered did not.
    if (state_ == connection_state::closing && !close_received_) ended_closing_ = true;
    state_ = connection_state::closed;
    if (!error_) error_ = why;
    if (was_open && counters_) count_end();
}

void connection::count_end() noexcept {
    const ending e = decided_ending();
    counters_->closed_by[static_cast<std::size_t>(e.by)].add();
    counters_->closed_by_code[code_slot(e.code)].add();
}

void connection::queue_close(std::uint16_t code, std::string_view reason) {
    close_sent_ = true;
    sent_code_ = code != 0 ? code : static_cast<std::uint16_t>(close_code::no_status);
    if (code != 0 && !reason.empty()) {
        if (!reasons_) reasons_ = std::make_unique<close_reasons>();
        reasons_->ours = std::string(truncate_utf8(reason, max_close_reason));
    }
    const std::size_t before = pending_.size();
    writer_.append_close(out(), code, reason);
    count_control(before);
}

void connection::count_control(std::size_t queued_before) noexcept {
    if (auto* k = counters_) {
        k->frames_sent.add();
        // In 64 bits: a replaced pong may leave the queue shorter than it was.
        k->queued_output_bytes.add(std::uint64_t{pending_.size()} - queued_before);
    }
}

std::error_code connection::closed_error() const noexcept {
    if (!timed_out_) return error::closed;
    return error_ == error::send_timeout ? error_ : make_error_code(error::timeout);
}

connection::ending connection::decided_ending() const noexcept {
    ending e;
    if (close_sent_ && !peer_closed_first_) {
        e.code = sent_code_;
    } else if (close_received_) {
        e.code = peer_code_;
        e.remote = true;
    } else if (state_ == connection_state::closed) {
        // Neither side's close frame: the transport went (the peer's doing, unless a timeout
        // of ours cut it).
        e.code = static_cast<std::uint16_t>(close_code::abnormal);
        e.remote = !timed_out_;
    }
    e.by = e.remote ? ended_by::peer : ended_by::local;
    if (error_ == error::send_timeout || slow_consumer_) e.by = ended_by::slow_consumer;
    else if (timed_out_) e.by = ended_by::timeout;
    else if (error_ && error_ != error::closed) e.by = ended_by::error;
    return e;
}

close_info connection::closed_why() const {
    const ending e = decided_ending();
    close_info i;
    i.error = error_;
    i.code = e.code;
    i.remote = e.remote;
    i.by = e.by;
    if (!opened_) i.phase = upgrading_ ? close_phase::handshake : close_phase::connecting;
    else if (ended_closing_ || (state_ == connection_state::closing && !close_received_)) i.phase = close_phase::closing;
    else i.phase = close_phase::open;
    i.traffic = traffic_;
    if (reasons_ && e.code != 0 && e.code != static_cast<std::uint16_t>(close_code::abnormal))
        i.reason = e.remote ? reasons_->peer : reasons_->ours;
    return i;
}

// ---------------------------------------------------------------------- sending

std::error_code connection::write_status() const noexcept {
    if (write_error_) return write_error_;
    if (state_ != connection_state::open || close_sent_) return closed_error();
    return {};
}

bool connection::goes_direct(std::size_t size, bool compress) const noexcept {
    return local() == role::server && size >= opts_->direct_write_threshold && !writer_.would_compress(size, compress);
}

connection::direct_frame connection::next_direct_frame(std::span<std::uint8_t, max_frame_header_size> out,
                                                       message_kind kind, std::span<const std::uint8_t>& rest) {
    const std::size_t limit = writer_.frame_size() ? writer_.frame_size() : rest.size();
    direct_frame f;
    f.payload = rest.first(std::min(limit, rest.size()));
    rest = rest.subspan(f.payload.size());
    const opcode op = direct_continues_ ? opcode::continuation : data_opcode(kind);
    f.header_size = writer_.frame_header_for(out, op, rest.empty(), false, f.payload.size(), f.key);
    if (!direct_continues_) {
        ++traffic_.messages_sent;
        traffic_.payload_bytes_sent += f.payload.size() + rest.size();
    }
    if (auto* k = counters_) {
        if (!direct_continues_) {
            k->messages_sent.add();
            k->payload_bytes_sent.add(f.payload.size() + rest.size());
        }
        k->wire_bytes_sent.add(f.header_size + f.payload.size());
        k->frames_sent.add();
    }
    direct_continues_ = !rest.empty();
    return f;
}

std::error_code connection::send_message(message_kind kind, std::span<const std::uint8_t> payload, bool compress) {
    if (auto ec = write_status()) return ec;
    // Only the encoded bytes grow here (a shared frame's charge does not).
    const std::size_t before = pending_.bytes.size();
    if (auto ec = writer_.append_message(out(), kind, payload, compress)) {
        fail(ec);
        return ec;
    }
    count_sent(payload.size(), writer_.last_message_frames(), pending_.bytes.size() - before);
    return {};
}

std::error_code connection::send_prepared(const std::shared_ptr<const prepared_message>& pm) {
    if (auto ec = write_status()) return ec;
    const std::size_t before = pending_.size();
    auto payload = pm->payload();
    bool fragments = writer_.frame_size() != 0 && payload.size() > writer_.frame_size();
    bool compress = writer_.would_compress(payload.size(), true);
    const deflate_config& d = writer_.deflate_settings();
    // Without context takeover every connection's compressed bytes are the same.
    bool once = compress && d.send.no_context_takeover && !fragments;
    std::span<const std::uint8_t> ready;
    if (local() == role::client) {
        // A client masks every frame with a fresh key, so it copies, but compresses once.
        ready = once ? pm->deflated_payload(d.send.window_bits) : std::span<const std::uint8_t>{};
        if (!ready.empty()) writer_.append_frame(out(), data_opcode(pm->kind()), true, true, ready);
    } else {
        ready = !compress && !fragments ? pm->frame()
                : once                  ? pm->deflated_frame(d.send.window_bits)
                                        : std::span<const std::uint8_t>{};
        if (!ready.empty()) {
            out(); // the shared frame's position needs the queue's buffer
            pending_.add_shared(ready, pm);
            if (auto* k = counters_) k->wire_bytes_sent.add(ready.size());
        }
    }
    std::size_t frames = 1; // a shared or once-compressed frame is a whole message
    if (ready.empty()) {
        if (auto ec = writer_.append_message(out(), pm->kind(), payload, true)) {
            fail(ec);
            return ec;
        }
        frames = writer_.last_message_frames();
    }
    count_sent(payload.size(), frames, pending_.size() - before);
    return {};
}

std::error_code connection::send_ping(std::span<const std::uint8_t> payload, clock::time_point now) {
    if (auto ec = write_status()) return ec;
    const std::size_t before = pending_.size();
    writer_.append_control(out(), opcode::ping, payload);
    last_ping_ = now;
    if (counters_) counters_->pings_sent.add();
    count_control(before);
    return {};
}

std::error_code connection::send_pong(std::span<const std::uint8_t> payload) {
    if (auto ec = write_status()) return ec;
    const std::size_t before = pending_.size();
    writer_.append_control(out(), opcode::pong, payload);
    if (counters_) counters_->pongs_sent.add();
    count_control(before);
    return {};
}

void connection::queue_pong(std::span<const std::uint8_t> payload) {
    // RFC 6455 §5.5.3: only the latest of several unanswered pings needs its pong. A pong
    // still last in the queue is replaced, so a flood of pings queues one pong, not one each.
    auto& bytes = pending_.bytes;
    const std::size_t before = pending_.size();
    const bool replaces = pong_at_ != no_pong && pong_at_ + pong_size_ == bytes.size() &&
                          (!pending_.has_shared() || pending_.last_shared_at() <= pong_at_);
    if (replaces) bytes.truncate(pong_at_);
    byte_buffer& o = out();
    std::size_t at = o.size();
    writer_.append_control(o, opcode::pong, payload);
    if (auto* k = counters_) {
        // A replaced pong was counted as a frame and a pong when it was queued.
        if (!replaces) {
            k->pongs_sent.add();
            k->frames_sent.add();
        }
        k->queued_output_bytes.add(std::uint64_t{pending_.size()} - before);
    }
    // A queue past 4 GiB (a huge write_queue_limit) just does without the coalescing.
    pong_at_ = at < no_pong ? static_cast<std::uint32_t>(at) : no_pong;
    pong_size_ = static_cast<std::uint8_t>(o.size() - at);
}

// ---------------------------------------------------------------------- output

byte_buffer& connection::out() noexcept {
    if (pending_.bytes.capacity() == 0) detail::buffer_pool::writes().take(pending_.bytes);
    return pending_.bytes;
}

output_queue& connection::take_output() noexcept {
    std::swap(pending_, inflight_);
    pong_at_ = no_pong;
    // Encoded bytes here (nothing is queued before the connection opens); shared frames were
    // counted as they were queued (send_prepared), which spares a walk over them per write.
    if (auto* k = counters_) k->wire_bytes_sent.add(inflight_.bytes.size());
    return inflight_;
}

void connection::write_failed(std::error_code ec) noexcept {
    if (!write_error_) write_error_ = ec;
    if (auto* k = counters_) k->queued_output_bytes.subtract(queued());
    pending_.clear();
    inflight_.clear();
    pong_at_ = no_pong;
    output_done();
}

void connection::output_progress(clock::time_point now) noexcept {
    // Only while open: a closing connection's close_timeout bounds its last writes, and
    // timeout_at_ holds that deadline then.
    auto t = opts_->send_timeout;
    if (state_ == connection_state::open && t.count() > 0) timeout_at_ = now + t;
}

void connection::output_done() noexcept {
    if (state_ == connection_state::open) timeout_at_ = clock::time_point::max();
}

void connection::release_write_buffers() noexcept {
    // A buffer that grew past what the pool takes, up to twice the queue limit (a queue that
    // filled under back-pressure), stays: freeing it would make a sender that keeps the queue
    // full regrow it each time. One that a single large message grew beyond that goes.
    for (byte_buffer* b : {&pending_.bytes, &inflight_.bytes}) {
        if (!b->empty()) continue;
        if (detail::buffer_pool::poolable(b->capacity())) detail::buffer_pool::writes().give(*b);
        else if (b->capacity() > 2 * opts_->write_queue_limit) *b = byte_buffer{};
    }
}

// ---------------------------------------------------------------------- time

connection::clock::time_point connection::deadline() const noexcept {
    if (state_ != connection_state::open) return timeout_at_;
    auto d = clock::time_point::max();
    auto idle = opts_->idle_timeout;
    auto ping = opts_->ping_interval;
    if (idle.count() > 0) d = std::min(d, last_rx_ + idle);
    if (ping.count() > 0 && !close_sent_) d = std::min(d, std::max(last_rx_, last_ping_) + ping);
    return std::min(d, timeout_at_); // the send deadline, if a write is stalled
}

timer_outcome connection::on_timer(clock::time_point now) {
    if (now < deadline()) return timer_outcome::none;
    if (state_ == connection_state::open) {
        if (now >= timeout_at_) {
            send_timed_out();
            return timer_outcome::timed_out;
        }
        auto idle = opts_->idle_timeout;
        if (idle.count() <= 0 || now - last_rx_ < idle) {
            // Only the keepalive was due: any byte received counts as life, and a ping asks
            // a quiet peer for some.
            const std::size_t before = pending_.size();
            writer_.append_control(out(), opcode::ping, {});
            last_ping_ = now;
            if (counters_) counters_->pings_sent.add();
            count_control(before);
            return timer_outcome::ping;
        }
    }
    time_out();
    return timer_outcome::timed_out;
}

void connection::send_timed_out() {
    // The peer takes nothing, so this close frame cannot reach it (it waits behind a frame
    // half written); queued all the same, it is what closed_why() and the driver report.
    timeout_at_ = clock::time_point::max();
    timed_out_ = true;
    peer_code_ = static_cast<std::uint16_t>(close_code::abnormal);
    queue_close(static_cast<std::uint16_t>(close_code::policy_violation), send_timeout_reason);
    end(error::send_timeout);
}

void connection::time_out() noexcept {
    timeout_at_ = clock::time_point::max();
    if (close_sent_ && close_received_) {
        // The close handshake is complete; only the end of the transport was awaited.
        end(error::closed);
        return;
    }
    timed_out_ = true;
    if (state_ != connection_state::connecting && !close_received_)
        peer_code_ = static_cast<std::uint16_t>(close_code::abnormal);
    end(error::timeout);
}

} // namespace corows
