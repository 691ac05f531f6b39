#include "host/core/listen_probe.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tide {

Status checkCanListen(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return Status::ok();
  std::string host = address.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) return Status::ok();
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::ok();
  const int one = 1;
  // Best effort: without it a port in TIME_WAIT reads as taken, which errs on the safe side.
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  const int err = errno;
  ::close(fd);
  if (rc == 0) return Status::ok();
  if (err == EADDRINUSE) {
    return Status::unprocessable("address " + address + " is in use by another program on this machine");
  }
  if (err == EADDRNOTAVAIL) return Status::unprocessable("address " + address + " is not an address of this machine");
  if (err == EACCES) return Status::unprocessable("address " + address + ": permission denied (a port below 1024?)");
  return Status::ok();
}

bool portIsFree(int port, const std::string& protocol) {
  const bool tcp = protocol == "tcp";
  const int fd = ::socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  if (tcp) (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return free;
}

}  // namespace tide
