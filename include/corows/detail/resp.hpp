// SPDX-License-Identifier: BSL-1.0
// RESP, Redis' protocol, without I/O: hiredis' reply reader and command formatter behind RAII,
// with the bounds a connection needs against a server that sends too much. Only these
// I/O-free parts of hiredis are used; corows does the I/O itself, on Asio.
#pragma once

#if !defined(COROWS_HAS_REDIS)
#error "corows/detail/resp.hpp needs hiredis: install libhiredis-dev and build corows with -Dredis=enabled (which defines COROWS_HAS_REDIS)"
#endif

#include <hiredis/hiredis.h>

#include <climits>
#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <vector>

namespace corows::detail {

/// Frees a reply tree with freeReplyObject.
struct reply_deleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
/// One reply from the reader, owned.
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// The text of a string, status or error reply.
inline std::string_view reply_text(const redisReply& r) noexcept {
    return r.str ? std::string_view(r.str, r.len) : std::string_view();
}

/// One command in RESP (an array of bulk strings), formatted by hiredis and owned.
class resp_command {
public:
    /// Formats `args`; throws std::bad_alloc if hiredis cannot (no memory, or over 2 GiB).
    explicit resp_command(std::span<const std::string_view> args) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        argv.reserve(args.size());
        lengths.reserve(args.size());
        for (auto a : args) {
            argv.push_back(a.data());
            lengths.push_back(a.size());
        }
        char* out = nullptr;
        // hiredis counts in int: a command that does not fit fails like an allocation.
        if (args.size() > static_cast<std::size_t>(INT_MAX)) throw std::bad_alloc();
        int n = redisFormatCommandArgv(&out, static_cast<int>(args.size()), argv.data(), lengths.data());
        data_.reset(out);
        if (n < 0 || !out) throw std::bad_alloc();
        size_ = static_cast<std::size_t>(n);
    }

    /// The bytes to send.
    const char* data() const noexcept { return data_.get(); }
    /// How many.
    std::size_t size() const noexcept { return size_; }

private:
    struct command_deleter {
        void operator()(char* c) const noexcept { redisFreeCommand(c); }
    };
    std::unique_ptr<char, command_deleter> data_;
    std::size_t size_ = 0;
};

/// hiredis' reply reader with two bounds: at most `max_buffered` received bytes wait for
/// their reply to complete (so one endless bulk string cannot grow it without end), and one
/// reply holds at most `max_elements` array elements in all (so a small header such as
/// `*2147483647` cannot allocate gigabytes, nor a stream of tiny elements grow one reply).
/// Once failed, it stays failed: the connection is to be dropped.
class resp_reader {
public:
    /// A reader with those bounds; throws std::bad_alloc if hiredis cannot allocate.
    resp_reader(std::size_t max_buffered, long long max_elements)
        : reader_(redisReaderCreate()), budget_(std::make_unique<budget>()), max_buffered_(max_buffered) {
        if (!reader_) throw std::bad_alloc();
        budget_->max = max_elements;
        budget_->create_array = reader_->fn->createArray;
        reader_->fn = bounded_functions(reader_->fn);
        reader_->privdata = budget_.get();
    }

    /// Appends received bytes; false (the reader has failed) if they would leave more than
    /// `max_buffered` bytes waiting, or hiredis refuses them.
    bool feed(std::span<const char> bytes) {
        if (failed_) return false;
        std::size_t waiting = reader_->len - reader_->pos;
        if (bytes.size() > max_buffered_ || waiting > max_buffered_ - bytes.size()) return fail();
        if (redisReaderFeed(reader_.get(), bytes.data(), bytes.size()) != REDIS_OK) return fail();
        return true;
    }

    /// The next complete reply; null when more bytes are needed, or when the data is
    /// malformed or over a bound (then failed() is true).
    reply_ptr next() {
        if (failed_) return nullptr;
        void* out = nullptr;
        if (redisReaderGetReply(reader_.get(), &out) != REDIS_OK) {
            fail();
            return nullptr;
        }
        if (out) budget_->used = 0;
        return reply_ptr(static_cast<redisReply*>(out));
    }

    /// True once the stream was found malformed or over a bound.
    bool failed() const noexcept { return failed_; }
    /// Received bytes that wait for their reply to complete.
    std::size_t buffered() const noexcept { return reader_->len - reader_->pos; }

private:
    // hiredis hands this to createArray as the task's privdata.
    struct budget {
        long long max = 0;
        long long used = 0;
        void* (*create_array)(const redisReadTask*, int) = nullptr;
    };

    struct reader_deleter {
        void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
    };

    // Null makes hiredis fail the read (as out of memory), and free what it built.
    static void* bounded_create_array(const redisReadTask* task, int elements) {
        auto* b = static_cast<budget*>(task->privdata);
        if (!b || elements < 0 || elements > b->max - b->used) return nullptr;
        b->used += elements;
        return b->create_array(task, elements);
    }

    // hiredis' default reply functions with createArray bounded; every reader has the same
    // defaults, so one table serves them all.
    static redisReplyObjectFunctions* bounded_functions(const redisReplyObjectFunctions* defaults) {
        static redisReplyObjectFunctions table = [defaults] {
            redisReplyObjectFunctions t = *defaults;
            t.createArray = &bounded_create_array;
            return t;
        }();
        return &table;
    }

    bool fail() noexcept {
        failed_ = true;
        return false;
    }

    std::unique_ptr<redisReader, reader_deleter> reader_;
    std::unique_ptr<budget> budget_;
    std::size_t max_buffered_;
    bool failed_ = false;
};

} // namespace corows::detail
