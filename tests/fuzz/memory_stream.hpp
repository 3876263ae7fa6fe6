// SPDX-License-Identifier: BSL-1.0
// An in-memory Asio stream for driving a corows::websocket without sockets: reads hand out a
// fixed input in scripted chunk sizes and then report EOF; writes append to an output vector,
// optionally a few bytes at a time or failing after a byte budget. Every operation completes
// through the executor (never inline, as Asio requires), so a run is deterministic and ends as
// soon as the input is used up.
#pragma once

#include <corows/config.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/associated_executor.hpp>
#include <asio/bind_executor.hpp>
#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/post.hpp>
#include <asio/socket_base.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

namespace corows::test {

/// Both directions of a memory_stream and how they behave. Outlives the stream (which only
/// points to it) so the test can inspect what was written after the connection is gone.
struct memory_channel {
    /// The bytes reads deliver; not owned, must outlive the run.
    std::span<const std::uint8_t> input;
    /// Sizes of successive reads, used in a cycle; empty: each read takes all it can.
    std::vector<std::size_t> read_sizes;
    /// Most bytes one write_some takes; 0: all it is given.
    std::size_t write_chunk = 0;
    /// Writes fail with broken_pipe once this many bytes were written (a peer that went away).
    std::size_t write_limit = SIZE_MAX;

    std::vector<std::uint8_t> output; ///< everything written, in order
    std::size_t read_pos = 0;         ///< bytes of `input` delivered
    std::size_t reads = 0;            ///< completed read_some calls
    bool eof_reported = false;        ///< a read reported the end of the input
    bool closed = false;              ///< close() was called
    bool shut_down = false;           ///< shutdown() was called
};

/// An AsyncReadStream and AsyncWriteStream over a memory_channel, with the socket-like members
/// websocket<Stream> uses (lowest_layer(), close(), shutdown()). Like a socket, operations
/// that complete after close() report operation_aborted, and later ones bad_descriptor.
class memory_stream {
public:
    using executor_type = asio::any_io_executor;
    using lowest_layer_type = memory_stream;

    memory_stream(executor_type ex, memory_channel& channel) : ex_(std::move(ex)), ch_(&channel) {}

    executor_type get_executor() const noexcept { return ex_; }
    lowest_layer_type& lowest_layer() noexcept { return *this; }
    const lowest_layer_type& lowest_layer() const noexcept { return *this; }

    void close(std::error_code& ec) noexcept {
        ch_->closed = true;
        ec = {};
    }
    void shutdown(asio::socket_base::shutdown_type, std::error_code& ec) noexcept {
        ch_->shut_down = true;
        ec = ch_->closed ? make_error_code(asio::error::bad_descriptor) : std::error_code{};
    }
    bool is_open() const noexcept { return !ch_->closed; }

    template <class MutableBufferSequence, class Token>
    auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
            [this](auto handler, const MutableBufferSequence& bufs) {
                const bool was_closed = ch_->closed;
                complete(std::move(handler), [ch = ch_, bufs, was_closed](std::size_t& n) {
                    if (ch->closed) return aborted(was_closed);
                    if (asio::buffer_size(bufs) == 0) return std::error_code{};
                    if (ch->read_pos == ch->input.size()) {
                        ch->eof_reported = true;
                        return make_error_code(asio::error::eof);
                    }
                    std::size_t want = ch->input.size() - ch->read_pos;
                    if (!ch->read_sizes.empty())
                        want = std::min(want, ch->read_sizes[ch->reads % ch->read_sizes.size()]);
                    n = asio::buffer_copy(bufs, asio::buffer(ch->input.data() + ch->read_pos, want));
                    ch->read_pos += n;
                    ++ch->reads;
                    return std::error_code{};
                });
            },
            token, buffers);
    }

    template <class ConstBufferSequence, class Token>
    auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
            [this](auto handler, const ConstBufferSequence& bufs) {
                const bool was_closed = ch_->closed;
                complete(std::move(handler), [ch = ch_, bufs, was_closed](std::size_t& n) {
                    if (ch->closed) return aborted(was_closed);
                    std::size_t want = asio::buffer_size(bufs);
                    if (want == 0) return std::error_code{};
                    if (ch->output.size() >= ch->write_limit) return make_error_code(asio::error::broken_pipe);
                    if (ch->write_chunk != 0) want = std::min(want, ch->write_chunk);
                    want = std::min(want, ch->write_limit - ch->output.size());
                    const std::size_t old = ch->output.size();
                    ch->output.resize(old + want);
                    n = asio::buffer_copy(asio::buffer(ch->output.data() + old, want), bufs);
                    return std::error_code{};
                });
            },
            token, buffers);
    }

private:
    // A socket closed while the operation was pending aborts it; one closed before it started
    // refuses it.
    static std::error_code aborted(bool was_closed) {
        return make_error_code(was_closed ? asio::error::bad_descriptor : asio::error::operation_aborted);
    }

    // Runs `work` when the operation completes (not now: the state may change before then,
    // e.g. close() aborts it) and passes its result to `handler` on the handler's executor.
    template <class Handler, class Work>
    void complete(Handler handler, Work work) {
        auto handler_ex = asio::get_associated_executor(handler, ex_);
        asio::post(ex_, asio::bind_executor(handler_ex,
            [h = std::move(handler), w = std::move(work)]() mutable {
                std::size_t n = 0;
                const std::error_code ec = w(n);
                std::move(h)(ec, n);
            }));
    }

    executor_type ex_;
    memory_channel* ch_;
};

} // namespace corows::test
