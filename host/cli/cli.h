#pragma once
// The `tide` command line (docs/architecture.md#cli-and-host-configuration): `tide serve` runs the host; every other
// verb is a client of the HTTP API (commands.h). Exit status: 0 on success, 1 when the server or the input refused the
// request, 2 for a malformed command line.

#include <ostream>

namespace tide::cli {

// Parses `argv` and runs the chosen command, writing to std::cout and std::cerr.
int run(int argc, char** argv);

// The same with the output streams given, so tests run the CLI in-process. Errors go to
// `err` as "error: <message>" followed by one "  <location>: <field>: <message>" line per
// detail (a detail that only repeats the message is not printed again).
int run(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace tide::cli
