#include "proc/pipe.h"

#include <fcntl.h>
#include <unistd.h>

namespace bigmac::proc {

bool make_pipe(Pipe& out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  out.read.reset(fds[0]);
  out.write.reset(fds[1]);
  // Only the parent's end is non-blocking; the child keeps a blocking stdout as programs expect.
  return ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK) == 0;
}

}  // namespace bigmac::proc
