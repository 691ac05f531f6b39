// Bad values of numeric options, as the real `tide` binary answers them: one line naming the
// option and the value as typed, exit code 2, and nothing asked of a server (none runs here).

#include <string>

#include <doctest/doctest.h>

#include "tests/cli/cli_process.h"
#include "tests/cli/cli_test_support.h"

using namespace tide::testing;

namespace {

struct RefusedValue {
  const char* args;
  const char* error;
};

// Every kind of numeric option the CLI has, and every way a value can be wrong for it.
constexpr RefusedValue kRefusedValues[] = {
    // An operation ID, as a positional argument (CLI::PositiveNumber before).
    {"operations cancel abc", "error: id: 'abc' is not a positive whole number\n"},
    {"operations approve 0", "error: id: '0' is not a positive whole number\n"},
    {"operations reject 1.5", "error: id: '1.5' is not a positive whole number\n"},
    {"operations show 99999999999999999999", "error: id: '99999999999999999999' is too large\n"},
    // An operation ID, as an option.
    {"deployment approve-operation some-plan --operation-id abc",
     "error: --operation-id: 'abc' is not a positive whole number\n"},
    {"deployment reject-operation some-plan --operation-id=-4",
     "error: --operation-id: '-4' is not a positive whole number\n"},
    // A byte count (a string passed on to the server before).
    {"logs some-instance --tail-bytes x", "error: --tail-bytes: 'x' is not a positive whole number\n"},
    // A sequence number, where 0 is allowed.
    {"events --after=-1", "error: --after: '-1' is not a whole number\n"},
    {"events --after 12abc", "error: --after: '12abc' is not a whole number\n"},
    // An integer option without a check of its own: checked by its type.
    {"deployment update -m plan.yaml --generation two", "error: --generation: 'two' is not a whole number\n"},
    // Seconds, a positive number that need not be whole (CLI::PositiveNumber, made readable).
    {"deployment watch some-plan --interval 0", "error: --interval: '0' is not a positive number\n"},
    {"deployment watch some-plan --interval soon", "error: --interval: 'soon' is not a positive number\n"},
    // A number option without a check of its own: checked by its type.
    {"agent --server http://127.0.0.1:1 --node n1 --heartbeat-seconds often",
     "error: --heartbeat-seconds: 'often' is not a number\n"},
};

}  // namespace

TEST_CASE("cli: a bad numeric option value names the option and the value and exits 2") {
  tide::testing::TempDir scratch;
  for (const RefusedValue& refused : kRefusedValues) {
    CAPTURE(refused.args);
    CliRun run = runTideBinary(refused.args, scratch.path());
    CHECK(run.code == 2);
    CHECK(run.out.empty());
    CHECK(run.err == refused.error);
  }
}

TEST_CASE("cli: numeric options keep the values they accept") {
  tide::testing::TempDir scratch;
  // Parsing succeeds and the verb runs: it then fails to reach a server (exit 1).
  for (const char* accepted : {"operations show 7", "events --after 0", "logs some-instance --tail-bytes 100",
                               "deployment watch some-plan --interval 0.5", "operations cancel +3"}) {
    CAPTURE(accepted);
    CliRun run = runTideBinary(std::string(accepted) + " --server http://127.0.0.1:1", scratch.path());
    CHECK(run.code == 1);
    CHECK(contains(run.err, "cannot reach tide"));
  }
  // The help still names the kind of value each takes.
  CliRun help = runTideBinary("operations cancel --help", scratch.path());
  CHECK(help.code == 0);
  CHECK(contains(help.out, "INT:POSITIVE"));
}
