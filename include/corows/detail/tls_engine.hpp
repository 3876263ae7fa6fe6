// SPDX-License-Identifier: BSL-1.0
// TLS for one connection as bytes in, bytes out: OpenSSL behind a BIO that reads the
// ciphertext it is lent and writes into a vector, with no I/O and no buffer of its own while
// idle. After a TLS 1.3 handshake it can hand the records to tls13_records and free OpenSSL's
// connection. tls_stream.hpp puts a socket under it.
#pragma once

#include <corows/detail/tls13_records.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

struct ssl_st;
struct ssl_ctx_st;

namespace corows::detail {

/// What a tls_engine step needs next, or how it ended.
enum class tls_status : std::uint8_t {
    done,       ///< the step finished
    need_input, ///< OpenSSL needs more ciphertext: lend() what the socket has, then retry
    closed,     ///< the peer sent close_notify
    failed,     ///< a TLS error: see error()
};

/// One connection's TLS state. Not movable: OpenSSL's BIO points at it (hold it by pointer).
class tls_engine {
public:
    /// An engine under `ctx` (an SSL_CTX, whose settings it shares, not copies); throws
    /// std::runtime_error if OpenSSL cannot make one.
    explicit tls_engine(ssl_ctx_st* ctx);
    /// An engine that starts where detach_openssl() leaves one: no SSL object, the records
    /// protected by `records`, on the client's side with `client` (for tests and fuzzing of
    /// that state).
    explicit tls_engine(std::unique_ptr<tls13_records> records, bool client = false) noexcept
        : records_(std::move(records)), detach_possible_(false), client_(client) {}
    ~tls_engine();
    tls_engine(const tls_engine&) = delete;
    tls_engine& operator=(const tls_engine&) = delete;

    /// Sets the side this engine takes in the handshake; before the first handshake() call. A
    /// client follows its records for detach_openssl() only with `client_may_detach`.
    void set_server(bool server, bool client_may_detach = false) noexcept;
    /// Once a TLS 1.3 handshake (AES-GCM or ChaCha20-Poly1305) is done and OpenSSL holds no
    /// unread bytes, moves the records to tls13_records and frees the SSL object
    /// (native_handle() is null afterwards); true if the records are (now) outside OpenSSL.
    /// False leaves everything as it was: try again later, or for ever under OpenSSL.
    bool detach_openssl() noexcept;
    /// Never detaches: stops following the records for detach_openssl().
    void forgo_detach() noexcept {
        detach_possible_ = false;
        detach_.reset();
    }
    /// False once detach_openssl() can never succeed (TLS 1.2, another suite, no secrets).
    bool may_detach() const noexcept { return !records_ && detach_possible_; }
    /// True after detach_openssl() succeeded.
    bool detached() const noexcept { return records_ != nullptr; }
    /// Runs the handshake as far as the input allows; done once it is complete.
    tls_status handshake() noexcept;
    /// Decrypts up to `out.size()` (> 0) bytes of application data into `out`; `n` is how
    /// many. done means n > 0.
    tls_status read(std::span<std::uint8_t> out, std::size_t& n) noexcept;
    /// Encrypts all of `data` into the output (records of at most 16 KiB, or the limit the
    /// peer negotiated).
    tls_status write(std::span<const std::uint8_t> data) noexcept;
    /// Queues a close_notify alert into the output.
    tls_status shutdown() noexcept;
    /// True if close_notify may still go: the handshake is done and neither an alert (ours
    /// or the peer's) nor close_notify ended the connection.
    bool may_close_notify() const noexcept;

    /// Lends `ciphertext` received from the peer; it must stay valid until settle().
    void lend(std::span<const std::uint8_t> ciphertext) noexcept { loan_ = ciphertext; }
    /// Ends the loan: what OpenSSL did not take yet is copied into the engine's own buffer.
    void settle();

    /// Makes room in the output for `plaintext` bytes about to be written, with their records'
    /// overhead, so that write() appends without growing the vector record by record.
    void reserve_output(std::size_t plaintext) { out_.reserve(out_.size() + plaintext + (plaintext / 16384 + 1) * 64); }
    /// Gives OpenSSL's record buffers (about 17 KiB each way) back to the heap if they are
    /// empty; for a connection about to wait for its peer.
    void release_buffers() noexcept;
    /// True if ciphertext waits to be sent.
    bool has_output() const noexcept { return !out_.empty(); }
    /// The ciphertext to send, taken: the engine's output is empty afterwards.
    std::vector<std::uint8_t> take_output() noexcept;
    /// True if read() may produce bytes without more input.
    bool has_buffered_input() const noexcept;
    /// Bytes the engine itself keeps between calls (not counting OpenSSL's own state).
    std::size_t held_bytes() const noexcept { return in_.capacity() + out_.capacity() + plain_.capacity(); }
    /// OpenSSL's error code (ERR_get_error(), or one packed the same way after
    /// detach_openssl()) of the last failed step; 0 if none.
    unsigned long error() const noexcept { return error_; }
    /// The description (RFC 8446 §6) of the last fatal alert this engine sent; -1 if none.
    int alert_sent() const noexcept { return alert_sent_; }
    /// The OpenSSL connection, for settings and inspection (SNI, peer certificate, ...); null
    /// after detach_openssl().
    ssl_st* native_handle() const noexcept { return ssl_; }

    // For the BIO: OpenSSL reads ciphertext here and writes it here.
    int bio_read(char* to, int size) noexcept;
    int bio_write(const char* from, int size);
    // For the key log callback: one line of NSS key log format from OpenSSL.
    void key_logged(const char* line) noexcept;
    // For the info callback: OpenSSL wrote a fatal alert with `description`.
    void fatal_alert_written(std::uint8_t description) noexcept { alert_sent_ = description; }

private:
    /// Follows a stream of TLS records through the bytes fed to it, counting whole ones and
    /// keeping a copy of the last (detach_openssl() checks its keys and sequence on it).
    struct record_tracker {
        std::uint64_t count = 0;
        std::vector<std::uint8_t> last;    // the last whole record
        std::vector<std::uint8_t> current; // the record being fed
        std::size_t need = 5;              // bytes `current` lacks to reach the next step
        /// Takes the next `data` of the stream.
        void feed(std::span<const std::uint8_t> data);
        /// True between records.
        bool at_boundary() const noexcept { return current.empty(); }
    };

    // Secrets and counts gathered while OpenSSL runs the connection, for detach_openssl().
    struct detach_state {
        tls13_secret client_secret;
        tls13_secret server_secret;
        record_tracker in;               // records OpenSSL read
        record_tracker out;              // records OpenSSL wrote
        std::uint64_t in_at_done = 0;    // in.count when the handshake finished
        std::uint64_t out_at_done = 0;   // out.count when the last handshake record was written
        bool handshake_done = false;
        ~detach_state();
    };

    tls_status result(int ret) noexcept;
    tls_status fail(int reason, std::uint8_t alert) noexcept;
    tls_status read_records(std::span<std::uint8_t> out, std::size_t& n) noexcept;
    tls_status handshake_record(std::span<const std::uint8_t> content) noexcept;
    std::span<const std::uint8_t> pending_input() noexcept;
    int bio_read_raw(char* to, int size) noexcept;
    void track(record_tracker& t, std::span<const std::uint8_t> data) noexcept;
    void consume_input(std::size_t n) noexcept;

    ssl_st* ssl_ = nullptr;
    std::unique_ptr<detach_state> detach_;   // while the records may still leave OpenSSL
    std::unique_ptr<tls13_records> records_; // once they have
    std::vector<std::uint8_t> plain_;        // decrypted bytes read() had no room for
    std::size_t plain_pos_ = 0;
    unsigned records_without_data_ = 0;      // records in a row that brought no application data
    bool detach_possible_ = true;
    bool key_update_owed_ = false;           // the peer asked for our KeyUpdate
    bool peer_closed_ = false;
    bool sent_close_ = false;
    bool broken_ = false;
    bool client_ = false;
    // The post-handshake message being read (RFC 8446 §5.1: messages may share records and
    // span them): its header as far as it came, and body bytes still to come.
    std::array<std::uint8_t, 4> hs_head_{};
    std::uint8_t hs_head_size_ = 0;
    std::uint32_t hs_left_ = 0;
    std::span<const std::uint8_t> loan_;   // ciphertext lent for the current call
    std::vector<std::uint8_t> in_;         // ciphertext left over from a loan
    std::size_t in_pos_ = 0;               // how much of in_ OpenSSL has read
    std::vector<std::uint8_t> out_;        // ciphertext to send
    unsigned long error_ = 0;
    int alert_sent_ = -1;
};

} // namespace corows::detail
