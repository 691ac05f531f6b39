#pragma once
// Whether this machine could listen on a TCP address now: a plan's traffic endpoint
// (docs/architecture.md#traffic) is refused at create/update when another program holds it.

#include <string>

#include "host/core/status.h"

namespace tide {

// Binds (and at once closes) a TCP socket on `address` ("127.0.0.1:8080" or "localhost:8080",
// already validated) with SO_REUSEADDR, so a port left in TIME_WAIT does not count as taken.
// kUnprocessable naming the address when something listens on it; OK otherwise (also when the
// check itself cannot be made, e.g. no socket: the router reports a failed bind later).
Status checkCanListen(const std::string& address);

}  // namespace tide
