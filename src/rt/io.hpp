// Awaitable socket and timer operations on a loop. Call them on the loop's thread and
// co_await the returned task there. Every operation that takes a std::stop_token cancels
// its pending kernel operation when stop is requested (io_uring: IORING_OP_ASYNC_CANCEL;
// epoll: the waiter is deregistered) and then yields errc::cancelled. A stop already
// requested before the call yields errc::cancelled without touching the socket.
// fds must be non-blocking sockets (listen_tcp, accept, connect_tcp create them so);
// close sockets that had rt operations with rt::close, after their operations finished:
// the epoll backend keeps an fd registered, and the io_uring backend keeps a listening fd's
// multishot accept (with connections nobody took yet), until that close.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stop_token>
#include <string>

#include "base/result.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::rt {

// Accepts one connection on a listening socket. The new fd is non-blocking and CLOEXEC.
// Errors: errc::cancelled, errc::io (errno text; e.g. EMFILE: the caller should back off).
// Under io_uring the first accept on listen_fd arms a multishot accept that keeps taking
// connections between calls (queued for the next call); cancelling an accept or
// rt::close(listen_fd) stops it and closes the queued connections.
task<result<int>> accept(loop& lp, int listen_fd, std::stop_token stop = {});

// Receives up to buf.size() bytes (at least 1 unless EOF). 0 means the peer closed (EOF).
// Errors: errc::cancelled, errc::io (ECONNRESET ...).
task<result<std::size_t>> recv_some(loop& lp, int fd, std::span<std::byte> buf,
                                    std::stop_token stop = {});

// Sends all of buf, looping over partial writes (MSG_NOSIGNAL: a closed peer is errc::io
// with EPIPE, never SIGPIPE). On cancellation or error an unknown prefix may have been sent.
task<result<void>> send_all(loop& lp, int fd, std::span<const std::byte> buf,
                            std::stop_token stop = {});

// Closes fd (asynchronously on io_uring). The fd number is invalid afterwards even on error.
task<result<void>> close(loop& lp, int fd);

// Completes after `d` (d <= 0: on the next loop iteration, after already-due timers).
// Timers that expire at the same instant complete in the order they were started.
// Errors: errc::cancelled.
task<result<void>> sleep_for(loop& lp, std::chrono::nanoseconds d, std::stop_token stop = {});

// Connects a non-blocking TCP socket (TCP_NODELAY set) to a literal IPv4/IPv6 address or
// "localhost" (127.0.0.1); no DNS (it would block the loop). Errors: errc::invalid_argument
// (bad host), errc::io (ECONNREFUSED ...), errc::cancelled.
task<result<int>> connect_tcp(loop& lp, std::string host, std::uint16_t port,
                              std::stop_token stop = {});

}  // namespace vks::rt
