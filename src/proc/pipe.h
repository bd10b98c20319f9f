#pragma once

#include "core/fd.h"

namespace bigmac::proc {

using bigmac::Fd;

/// Both ends of a pipe; `read` is made non-blocking, both are close-on-exec.
struct Pipe {
  Fd read;
  Fd write;
};

/// Creates a pipe whose read end never blocks; errno is kept on failure.
bool make_pipe(Pipe& out);

}  // namespace bigmac::proc
