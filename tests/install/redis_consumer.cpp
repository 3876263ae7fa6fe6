// SPDX-License-Identifier: BSL-1.0
// A program that uses the Redis backplane of an installed corows, built through corows-redis.pc
// or CMake's corows::redis (tests/install/run.sh): the flags bring hiredis and
// COROWS_HAS_REDIS. A backplane is made, started against a port nothing listens on, and stopped.
#include <corows/redis_backplane.hpp>

#include <cstdio>

int main() {
    namespace asio = corows::asio;
    asio::io_context ctx;
    corows::redis_options o;
    o.port = 1; // nothing listens there: the backplane retries until stopped
    auto bp = corows::redis_backplane::create(ctx.get_executor(), o);
    bp->start();
    ctx.run_for(std::chrono::milliseconds(50));
    bp->stop();
    ctx.run_for(std::chrono::milliseconds(50));
    std::printf("redis consumer: connected=%d\n", bp->connected() ? 1 : 0);
    return bp->connected() ? 1 : 0;
}
