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

#include <mutex>
#include <string>

#include <doctest/doctest.h>

namespace tide::testing {

// A TCP port on the loopback address that was free a moment ago (the kernel's choice).
inline int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

struct PortRange {
  int start = 0;
  int end = 0;  // inclusive
};

inline constexpr int kFirstBlockPort = 20000;
inline constexpr int kBlockSize = 200;
inline constexpr int kBlockCount = 63;  // 20000 .. 32599

// `count` ports (at most kBlockSize) that no other test process uses while this one runs.
// Successive calls return the next slice of this process's block, wrapping around, so
// fixtures built one after another in one process get fresh ports too. Thread-safe.
inline PortRange nextPortRange(int count) {
  REQUIRE(count > 0);
  REQUIRE(count <= kBlockSize);
  static std::mutex mu;
  static int block_start = 0;
  static int next = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (block_start == 0) {
    for (int block = 0; block < kBlockCount && block_start == 0; ++block) {
      const std::string path = "/tmp/tide-test-ports." + std::to_string(block) + ".lock";
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        block_start = kFirstBlockPort + block * kBlockSize;  // fd stays open: the lock lives on
      } else {
        ::close(fd);
      }
    }
    REQUIRE_MESSAGE(block_start != 0, "every test port block is taken by other test processes");
  }
  if (next + count > kBlockSize) next = 0;
  PortRange range{block_start + next, block_start + next + count - 1};
  next += count;
  return range;
}

}  // namespace tide::testing
