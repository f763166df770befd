// Socket activation (sd_listen_fds(3)) for the main port, and the re-exec that hands the
// same listening socket to a fresh copy of the process (`--on-device-lost recover`):
// connections waiting in the listen backlog survive the reload.
// Main thread only; call remember_argv() from main() before anything else.
#pragma once

#include <optional>

#include "base/result.hpp"

namespace vks::server {

void remember_argv(int argc, char** argv);

// The socket passed as fd 3 when $LISTEN_PID is this process and $LISTEN_FDS >= 1 (extra
// fds are left alone): checked to be a listening stream socket, made non-blocking and
// close-on-exec; LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES are unset. nullopt when none was
// passed; an error when fd 3 is not a listening socket.
result<std::optional<int>> take_activated_socket();

// Replaces the process image with the same binary and arguments, `listen_fd` passed as an
// activated socket (fd 3, LISTEN_PID = our pid, which exec keeps). Returns only on failure.
// Other threads must be stopped first (exec ends them without cleanup).
result<void> reexec_with_socket(int listen_fd);

}  // namespace vks::server
