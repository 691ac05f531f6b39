#include <signal.h>

#include "drivers/process/spawn.h"
#include "host/cli/cli.h"

int main(int argc, char** argv) {
  tide::drivers::setProcessTitleArea(argc, argv);  // before any thread: the waiters' names in `ps`
  // A peer that hangs up (an API client, a health probe's target, an agent's host, haproxy's
  // runtime socket) is an error on that write, never the end of the process. Workloads and
  // exec checks start with the default disposition (drivers/process/spawn.h, health_probe.cpp).
  ::signal(SIGPIPE, SIG_IGN);
  return tide::cli::run(argc, argv);
}
