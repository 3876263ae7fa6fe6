// TLS for one connection as bytes in, bytes out: OpenSSL behind a BIO that reads the
// ciphertext it is lent and writes into a vector, with no I/O and no buffer of its own while
// idle. tls_stream.hpp puts a socket under it.
#pragma once

#include <cstddef>
#include <cstdint>
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
    ~tls_engine();
    tls_engine(const tls_engine&) = delete;
    tls_engine& operator=(const tls_engine&) = delete;

    /// Sets the side this engine takes in the handshake; before the first handshake() call.
    void set_server(bool server) noexcept;
    /// Runs the handshake as far as the input allows; done once it is complete.
    tls_status handshake() noexcept;
    /// Decrypts up to `out.size()` (> 0) bytes of application data into `out`; `n` is how
    /// many. done means n > 0.
    tls_status read(std::span<std::uint8_t> out, std::size_t& n) noexcept;
    /// Encrypts all of `data` into the output (records of at most 16 KiB).
    tls_status write(std::span<const std::uint8_t> data) noexcept;
    /// Queues a close_notify alert into the output.
    tls_status shutdown() noexcept;

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
    std::size_t held_bytes() const noexcept { return in_.capacity() + out_.capacity(); }
    /// OpenSSL's error code (ERR_get_error()) of the last failed step; 0 if none.
    unsigned long error() const noexcept { return error_; }
    /// The OpenSSL connection, for settings and inspection (SNI, peer certificate, ...).
    ssl_st* native_handle() const noexcept { return ssl_; }

    // For the BIO: OpenSSL reads ciphertext here and writes it here.
    int bio_read(char* to, int size) noexcept;
    int bio_write(const char* from, int size);

private:
    tls_status result(int ret) noexcept;

    ssl_st* ssl_ = nullptr;
    std::span<const std::uint8_t> loan_;   // ciphertext lent for the current call
    std::vector<std::uint8_t> in_;         // ciphertext left over from a loan
    std::size_t in_pos_ = 0;               // how much of in_ OpenSSL has read
    std::vector<std::uint8_t> out_;        // ciphertext to send
    unsigned long error_ = 0;
};

} // namespace corows::detail
