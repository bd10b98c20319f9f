#include "core/fd.h"

#include <unistd.h>

namespace bigmac {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace bigmac
