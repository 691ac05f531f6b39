#pragma once
// An httplib::Server that listens the way a server on a shared machine must (tide's API
// server, host/api/transport.h, and `tide workload`, drivers/process/workload.cpp):
//   - SO_REUSEADDR without SO_REUSEPORT: httplib's default sets SO_REUSEPORT, with which a
//     second process binds the same address and the kernel splits connections between the
//     two. SO_REUSEADDR alone still lets a restarted server rebind while old connections sit
//     in TIME_WAIT, and refuses a port another socket listens on.
//   - a listen backlog of a server's size: Debian's cpp-httplib is a compiled library that
//     listens with 5, so a burst of new clients (a proxy opening connections, a load
//     generator) has SYNs dropped, and each dropped one waits a second for its retry.

#include <httplib.h>

namespace tide::drivers {

class ListeningServer : public httplib::Server {
 public:
  // What setListenBacklog asks for unless told otherwise (the kernel caps it at somaxconn).
  static constexpr int kDefaultBacklog = 1024;

  ListeningServer();

  // After binding: lets `backlog` connections wait to be accepted. Best effort: a backlog the
  // kernel refuses leaves the one listen() already set.
  void setListenBacklog(int backlog = kDefaultBacklog);
};

}  // namespace tide::drivers
