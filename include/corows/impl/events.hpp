// SPDX-License-Identifier: BSL-1.0
// run_events(): the read pump driven by completion handlers instead of a coroutine, so an
// idle connection holds its state and one pending socket operation, no coroutine frame.
#pragma once

#include <corows/asio.hpp>
#include <corows/detail/transport.hpp>

#include <exception>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>

namespace corows {
namespace detail {

/// The event driver of one connection: the same transport steps as read_loop(), with a completion
/// handler where read_loop() would co_await. Each handler holds the websocket and the
/// handlers, so both live until on_close has returned.
template <class Stream>
struct event_driver {
    using ws_ptr = std::shared_ptr<websocket<Stream>>;
    using handlers_ptr = std::shared_ptr<const event_handlers<Stream>>;

    ws_ptr ws;
    handlers_ptr h;

    // Runs `f`; if it throws, reports that to on_error and closes the connection with 1011.
    template <class F>
    void guarded(F&& f) noexcept {
        try {
            f();
        } catch (...) {
            if (h->on_error) {
                try {
                    h->on_error(*ws, std::current_exception());
                } catch (...) {
                    // A failing reporter must not take the thread down.
                }
            }
            ws->start_close(static_cast<std::uint16_t>(close_code::internal_error));
        }
    }

    // Delivers every message that can be decoded without waiting, then waits (for the socket,
    // for room in the write queue, or for the thread's other work) with a handler that comes
    // back here; at the end, tells on_close.
    static void step(event_driver d) {
        auto s = d.ws->s_;
        message& m = *s->assembly;
        for (;;) {
            switch (s->advance(s, m, true)) {
            case pump_step::message:
                if (d.h->on_message) d.guarded([&] { d.h->on_message(*d.ws, m); });
                continue;
            case pump_step::readable:
                if constexpr (transport<Stream>::waits_without_buffer) {
                    s->stream.async_wait(asio::socket_base::wait_read,
                                         asio::bind_allocator(exact_allocator<void>{},
                                                              [d = std::move(d)](error_code ec) mutable {
                                                                  auto& p = *d.ws->s_;
                                                                  // Even a cancelled wait ends event mode:
                                                                  // nobody would restart it.
                                                                  if (ec) p.read_failed();
                                                                  else p.readable();
                                                                  step(std::move(d));
                                                              }));
                }
                return;
            case pump_step::read: {
                auto space = s->conn.receive_space();
                s->stream.async_read_some(asio::buffer(space.data(), space.size()),
                                          [d = std::move(d)](error_code ec, std::size_t n) mutable {
                                              auto& p = *d.ws->s_;
                                              if (!p.received(n, ec)) p.read_failed();
                                              step(std::move(d));
                                          });
                return;
            }
            case pump_step::room:
                s->wait_signal([d = std::move(d)](error_code) mutable {
                    d.ws->s_->resume();
                    step(std::move(d));
                });
                return;
            case pump_step::yield:
                asio::post(s->stream.get_executor(), [d = std::move(d)]() mutable {
                    d.ws->s_->resume();
                    step(std::move(d));
                });
                return;
            case pump_step::ended:
                if (!s->transport_closed) {
                    // The writer sends the last frames, then closes the transport.
                    s->wait_signal([d = std::move(d)](error_code) mutable { step(std::move(d)); });
                    return;
                }
                s->reading = false;
                if (d.h->on_close) d.guarded([&] { d.h->on_close(*d.ws, s->end_report()); });
                return;
            }
        }
    }
};

} // namespace detail

template <class Stream>
void run_events(std::shared_ptr<websocket<Stream>> ws,
                std::type_identity_t<std::shared_ptr<const event_handlers<Stream>>> handlers) {
    auto& s = ws->s_;
    detail::event_driver<Stream> d{ws, std::move(handlers)};
    if (s->reading) {
        // Someone else reads this connection: events cannot start.
        if (d.h->on_close) d.guarded([&] { d.h->on_close(*ws, make_error_code(error::operation_in_progress)); });
        return;
    }
    s->reading = true;
    if (!s->assembly) s->assembly = std::make_unique<message>();
    if (d.h->on_open) d.guarded([&] { d.h->on_open(*ws); });
    detail::event_driver<Stream>::step(std::move(d));
}

} // namespace corows
