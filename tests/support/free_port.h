#pragma once
// A TCP port on the loopback address that was free a moment ago: bound to port 0 (the kernel
// picks) and closed again. Without doctest, so harnesses and benches share it with the tests
// (tests/support/ports.h wraps it in a REQUIRE).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tide::testing {

// The port, or 0 when the kernel gave none.
inline int unusedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  return bound ? ntohs(address.sin_port) : 0;
}

}  // namespace tide::testing
