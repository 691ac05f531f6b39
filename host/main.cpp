#include "drivers/process/spawn.h"
#include "host/cli/cli.h"

int main(int argc, char** argv) {
  tide::drivers::setProcessTitleArea(argc, argv);  // before any thread: the waiters' names in `ps`
  return tide::cli::run(argc, argv);
}
