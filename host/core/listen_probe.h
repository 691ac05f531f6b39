#pragma once
// Whether this machine could listen on an address now: a plan's traffic endpoint
// (docs/architecture.md#traffic) is refused at create/update when another program holds it,
// and drivers hand out only host ports nothing holds.

#include <string>

#include "host/core/status.h"

namespace tide {

// Binds (and at once closes) a TCP socket on `address` ("127.0.0.1:8080" or "localhost:8080",
// already validated) with SO_REUSEADDR, so a port left in TIME_WAIT does not count as taken.
// kUnprocessable naming the address when something listens on it; OK otherwise (also when the
// check itself cannot be made, e.g. no socket: the router reports a failed bind later).
Status checkCanListen(const std::string& address);

// True when nothing is bound to `port` for `protocol` ("tcp" or "udp") on any address: a
// server binding it on every address would succeed now (for tcp with SO_REUSEADDR, so a port
// whose last user left TIME_WAIT behind counts as free). What drivers check before handing
// a host port to a workload.
bool portIsFree(int port, const std::string& protocol);

}  // namespace tide
