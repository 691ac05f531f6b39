#pragma once
// Ports for tests. ctest runs every test case as its own process, two at a time or more, so
// tests whose workloads take host ports from a range (the process driver) must not share
// that range with a test running beside them: both would see a port free and race for it.
//
// Each test process locks one block of kBlockSize ports for its lifetime (an flock on a file
// under /tmp, released by the kernel when the process exits) and hands out consecutive slices
// of it. Blocks lie below the kernel's ephemeral range (32768 and up), so a port freePort()
// returns never falls into anyone's block.

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <doctest/doctest.h>

#include "tests/support/free_port.h"

namespace tide::testing {

// A TCP port on the loopback address that was free a moment ago (the kernel's choice).
inline int freePort() {
  const int port = unusedLoopbackPort();
  REQUIRE(port > 0);
  return port;
}

// The listen backlog of the socket listening on 127.0.0.1:`port` (what `ss -ltn` prints as
// Send-Q for a listener), or -1 when none listens there. Needs `ss` (iproute2,
// .ci/install-deps).
inline int listenBacklogOf(int port) {
  const std::string command = "ss -Hltn 'sport = :" + std::to_string(port) + "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char state[32] = {};
  int received = 0, backlog = -1;
  const int fields = std::fscanf(pipe, "%31s %d %d", state, &received, &backlog);
  ::pclose(pipe);
  return fields == 3 && std::string(state) == "LISTEN" ? backlog : -1;
}

// Whether a second socket, asking for SO_REUSEPORT, can also listen on 127.0.0.1:`port`
// (it can when the one listening there set SO_REUSEPORT too, and then the kernel splits
// new connections between the two).
inline bool portCanBeShared(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool shared = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && ::listen(fd, 1) == 0;
  ::close(fd);
  return shared;
}

struct PortRange {
  int start = 0;
  int end = 0;  // inclusive
};

inline constexpr int kFirstBlockPort = 20000;
inline constexpr int kBlockSize = 1000;
inline constexpr int kBlockCount = 12;  // 20000 .. 31999

// True when a server could bind `port` on every address now, for TCP and UDP, without
// SO_REUSEADDR: not even a TIME_WAIT connection of an earlier test holds it.
inline bool portIsUntouched(int port) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    if (!bound) return false;
  }
  return true;
}

// `count` ports (at most 100) that no other test process uses while this one runs, the first
// of them untouched (tests may assume the first port of their range is free). Successive
// calls, in this process and in the next one to hold the same block, go on from where the
// last left off (the offset is kept in the block's lock file), so a port comes round again
// only after the whole block was used. Thread-safe.
inline PortRange nextPortRange(int count) {
  REQUIRE(count > 0);
  REQUIRE(count <= 100);
  static std::mutex mu;
  static int block_fd = -1;
  static int block_start = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (block_fd < 0) {
    for (int block = 0; block < kBlockCount && block_fd < 0; ++block) {
      const std::string path = "/tmp/tide-test-ports." + std::to_string(block) + ".lock";
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        block_fd = fd;  // stays open: the lock lives until this process exits
        block_start = kFirstBlockPort + block * kBlockSize;
      } else {
        ::close(fd);
      }
    }
    REQUIRE_MESSAGE(block_fd >= 0, "every test port block is taken by other test processes");
  }
  char text[16] = {};
  const ssize_t read = ::pread(block_fd, text, sizeof text - 1, 0);
  int next = read > 0 ? std::atoi(text) : 0;
  for (int tries = 0; tries < kBlockSize; ++tries, ++next) {
    if (next < 0 || next + count > kBlockSize) next = 0;
    if (portIsUntouched(block_start + next)) break;
  }
  PortRange range{block_start + next, block_start + next + count - 1};
  const std::string written = std::to_string(next + count);
  REQUIRE(::ftruncate(block_fd, 0) == 0);
  REQUIRE(::pwrite(block_fd, written.data(), written.size(), 0) == static_cast<ssize_t>(written.size()));
  return range;
}

}  // namespace tide::testing
