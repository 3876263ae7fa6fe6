// SPDX-License-Identifier: BSL-1.0
#pragma once
// The instantiations the library compiles once, for the stream types most programs use, so
// that a user's file does not compile them again (src/instances/). They are used only where
// the file sees Asio as the library did: some Asio settings change Asio's types (the
// properties of any_io_executor, what a socket holds), and a file compiled with another
// would call the library's code on objects of another layout. Elsewhere, and wherever
// COROWS_HEADER_ONLY is defined, everything is instantiated in the user's file, as in a
// header-only library.
//
// The library's build tells its consumers COROWS_INSTANCES (it has them) and, when it was
// built with Asio's deprecated APIs removed, COROWS_INSTANCES_NO_DEPRECATED: through the Meson
// dependency, corows.pc and the CMake package.

#if defined(ASIO_NO_DEPRECATED) || defined(BOOST_ASIO_NO_DEPRECATED)
#define COROWS_DETAIL_SEES_NO_DEPRECATED 1
#else
#define COROWS_DETAIL_SEES_NO_DEPRECATED 0
#endif
#if defined(COROWS_INSTANCES_NO_DEPRECATED)
#define COROWS_DETAIL_BUILT_NO_DEPRECATED 1
#else
#define COROWS_DETAIL_BUILT_NO_DEPRECATED 0
#endif

/// 1 where the library's compiled instances may be used (see above), 0 where this file
/// instantiates everything itself. The other settings listed change Asio's (or the standard
/// library's) types, and the library is never built with them.
#if defined(COROWS_INSTANCES) && !defined(COROWS_HEADER_ONLY) &&                                          \
    COROWS_DETAIL_SEES_NO_DEPRECATED == COROWS_DETAIL_BUILT_NO_DEPRECATED &&                                \
    !defined(ASIO_ENABLE_HANDLER_TRACKING) && !defined(BOOST_ASIO_ENABLE_HANDLER_TRACKING) &&             \
    !defined(ASIO_ENABLE_BUFFER_DEBUGGING) && !defined(BOOST_ASIO_ENABLE_BUFFER_DEBUGGING) &&             \
    !defined(ASIO_DISABLE_EPOLL) && !defined(BOOST_ASIO_DISABLE_EPOLL) && !defined(ASIO_HAS_IO_URING) &&  \
    !defined(BOOST_ASIO_HAS_IO_URING) && !defined(ASIO_USE_TS_EXECUTOR_AS_DEFAULT) &&                     \
    !defined(BOOST_ASIO_USE_TS_EXECUTOR_AS_DEFAULT) && !defined(ASIO_NO_TS_EXECUTORS) &&                  \
    !defined(BOOST_ASIO_NO_TS_EXECUTORS) && !defined(_GLIBCXX_DEBUG)
#define COROWS_DETAIL_LIBRARY_INSTANCES 1
#else
#define COROWS_DETAIL_LIBRARY_INSTANCES 0
#endif

/// Every operation of websocket<S> that is not a member: X is `extern` (a declaration) or
/// nothing (the library's definition). Expanded in namespace corows::detail.
#define COROWS_DETAIL_OPERATIONS(X, S)                                                                          \
    X template asio::awaitable<error_code> read_body_bytes<S>(std::shared_ptr<transport<S>>, http_body_decoder&, \
                                                              std::string&);                                   \
    X template void handshake_phase<S>(const std::shared_ptr<transport<S>>&);                                 \
    X template asio::awaitable<void> write_and_close<S>(std::shared_ptr<transport<S>>, std::string);          \
    X template void opened<S>(const std::shared_ptr<transport<S>>&, role, std::string,                        \
                              const std::optional<deflate_params>&);                                           \
    X template asio::awaitable<error_code> accept_upgrade<S>(std::shared_ptr<transport<S>>, const upgrade_request&, \
                                                             const accept_decision&);                          \
    X template asio::awaitable<error_code> accept_request<S>(std::shared_ptr<transport<S>>, const http_request&, \
                                                             const accept_decision&);                          \
    X template asio::awaitable<error_code> accept_decided<S>(std::shared_ptr<transport<S>>, const http_request&, \
                                                             const upgrade_request&, const upgrade_decider&);  \
    X template asio::awaitable<error_code> accept<S>(std::shared_ptr<transport<S>>, const upgrade_decider*);   \
    X template asio::awaitable<void> accept_or_throw<S>(std::shared_ptr<transport<S>>);                        \
    X template asio::awaitable<void> accept_or_throw<S>(std::shared_ptr<transport<S>>, upgrade_decider);       \
    X template asio::awaitable<void> accept_or_throw<S>(std::shared_ptr<transport<S>>, http_request, accept_decision); \
    X template asio::awaitable<void> accept_or_throw<S>(std::shared_ptr<transport<S>>, upgrade_request,        \
                                                        accept_decision);                                      \
    X template asio::awaitable<http_request> read_request<S>(std::shared_ptr<transport<S>>, error_code*);      \
    X template asio::awaitable<void> refuse<S>(std::shared_ptr<transport<S>>, std::string);                    \
    X template error_code begin_close<S>(const std::shared_ptr<transport<S>>&, std::uint16_t, std::string_view); \
    X template asio::awaitable<error_code> close<S>(std::shared_ptr<transport<S>>, std::uint16_t, std::string_view); \
    X template asio::awaitable<void> close_or_throw<S>(std::shared_ptr<transport<S>>, std::uint16_t, std::string); \
    X template asio::awaitable<void> read_refusal_body<S>(std::shared_ptr<transport<S>>, http_response&);      \
    X template asio::awaitable<error_code> handshake<S>(std::shared_ptr<transport<S>>, const std::string&,     \
                                                        const std::string&, const handshake_request&,          \
                                                        http_response*);                                       \
    X template asio::awaitable<void> handshake_or_throw<S>(std::shared_ptr<transport<S>>, std::string, std::string, \
                                                           handshake_request);                                 \
    X template asio::awaitable<void> handshake_with_answer<S>(std::shared_ptr<transport<S>>, std::string,      \
                                                              std::string, std::shared_ptr<handshake_request>, \
                                                              http_response*, error_code*);                    \
    X template asio::awaitable<error_code> read_body<S>(std::shared_ptr<transport<S>>, http_body_decoder, bool, \
                                                        std::string*);                                         \
    X template asio::awaitable<std::string> read_body_or_throw<S>(std::shared_ptr<transport<S>>, http_body_decoder, \
                                                                  bool);                                       \
    X template asio::awaitable<std::string> read_body_into_ec<S>(std::shared_ptr<transport<S>>, http_body_decoder, \
                                                                 bool, error_code*);                           \
    X template asio::awaitable<std::string> body_refused<S>(error_code, error_code*);                          \
    X template asio::awaitable<error_code> write_response<S>(std::shared_ptr<transport<S>>, std::string, bool); \
    X template asio::awaitable<void> write_response_or_throw<S>(std::shared_ptr<transport<S>>, std::string, bool); \
    X template asio::awaitable<void> write_response_into_ec<S>(std::shared_ptr<transport<S>>, std::string, bool, \
                                                               error_code*);                                   \
    X template asio::awaitable<std::string> start_read_body<S>(const std::shared_ptr<transport<S>>&,           \
                                                               const http_request&, error_code*);              \
    X template asio::awaitable<error_code> wait_out<S>(std::shared_ptr<transport<S>>, pump_step);              \
    X template asio::awaitable<bool> read_loop<S>(std::shared_ptr<transport<S>>, message&, error_code*);       \
    X template asio::awaitable<std::optional<message>> read_owned<S>(std::shared_ptr<transport<S>>);           \
    X template bool queue_now<S>(const std::shared_ptr<transport<S>>&, std::span<const std::uint8_t>, message_kind, \
                                 bool, error_code&);                                                           \
    X template asio::awaitable<error_code> write_direct<S>(std::shared_ptr<transport<S>>, std::span<const std::uint8_t>, \
                                                           message_kind);                                      \
    X template asio::awaitable<error_code> write_slow<S>(std::shared_ptr<transport<S>>, std::span<const std::uint8_t>, \
                                                         message_kind, bool);                                  \
    X template asio::awaitable<void> write<S>(std::shared_ptr<transport<S>>, std::span<const std::uint8_t>,    \
                                              message_kind, bool, error_code*);                                \
    X template error_code queue_control<S>(const std::shared_ptr<transport<S>>&, opcode, std::span<const std::uint8_t>); \
    X template error_code queue_prepared<S>(const std::shared_ptr<transport<S>>&,                             \
                                            const std::shared_ptr<const prepared_message>&);                   \
    X template bool send_prepared<S>(const std::shared_ptr<transport<S>>&, const std::shared_ptr<const prepared_message>&); \
    X template bool send_now<S>(const std::shared_ptr<transport<S>>&, std::span<const std::uint8_t>, message_kind, bool); \
    X template asio::awaitable<void> write_prepared<S>(std::shared_ptr<transport<S>>,                          \
                                                       std::shared_ptr<const prepared_message>);               \
    X template asio::awaitable<void> control<S>(std::shared_ptr<transport<S>>, opcode, std::span<const std::uint8_t>); \
    X template asio::awaitable<void> flush_or_throw<S>(std::shared_ptr<transport<S>>);

/// websocket<S> and its operations.
#define COROWS_DETAIL_WEBSOCKET_INSTANCES(X, S)                                                                 \
    namespace corows {                                                                                         \
    X template class websocket<S>;                                                                             \
    X template void run_events<S>(std::shared_ptr<websocket<S>>,                                              \
                                  std::type_identity_t<std::shared_ptr<const event_handlers<S>>>);           \
    namespace detail {                                                                                         \
    COROWS_DETAIL_OPERATIONS(X, S)                                                                             \
    }                                                                                                          \
    }
