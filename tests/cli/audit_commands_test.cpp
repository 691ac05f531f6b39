// `tide audit verify` against a real `tide serve` that prunes its ledger at start: the pruned
// chain verifies (through the host and from the file), and an event edited on disk after the
// prune is named, with exit code 1, both ways.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"
#include "tests/support/raw_sql.h"

using namespace tide;
using namespace tide::testing;
using nlohmann::json;

namespace {

json verifyJson(const ServeProcess& serve) {
  CliRun run = serve.tide("audit verify -o json");
  return json::parse(run.out, nullptr, false);
}

CliRun verifyFile(const ServeProcess& serve) {
  return runCli({"audit", "verify", "--data-dir", serve.dataDir().string()});
}

}  // namespace

TEST_CASE("cli: audit verify proves a chain tide serve pruned, and names an event edited after the prune") {
  ServeProcess serve("retention: {events_max_count: 10}\n");
  for (int i = 0; i < 15; ++i) {
    CliRun created = serve.tide("token create --role viewer --name reader-" + std::to_string(i));
    REQUIRE_MESSAGE(created.code == 0, created.err);
  }
  // A restart runs a pruning round at start, down to the 10 newest events.
  const int64_t before_restart = verifyJson(serve)["last_seq"].get<int64_t>();
  serve.stop();
  serve.start();
  json report;
  REQUIRE(eventually([&] {
    report = verifyJson(serve);
    return report.is_object() && report["checkpoint"].is_object() &&
           report["checkpoint"]["through_seq"].get<int64_t>() > before_restart - 10;
  }));
  CHECK(report["ok"] == true);
  CHECK(report["checkpoint"]["actor"] == "retention");
  CHECK(report["first_seq"] == report["checkpoint"]["through_seq"].get<int64_t>() + 1);

  CliRun ok = serve.tide("audit verify");
  CHECK_MESSAGE(ok.code == 0, ok.err);
  CHECK(contains(ok.out, "audit: OK"));
  CHECK(contains(ok.out,
                 "checkpoint: through seq " + std::to_string(report["checkpoint"]["through_seq"].get<int64_t>())));
  CliRun offline = verifyFile(serve);
  CHECK_MESSAGE(offline.code == 0, offline.err);
  CHECK(contains(offline.out, "audit: OK"));

  // Edit a kept event on disk while the host is down; it refuses to act on the ledger at its
  // next start, and both checks name the event.
  const int64_t edited = report["first_seq"].get<int64_t>() + 2;
  serve.stop();
  execRawSql((serve.dataDir() / "tide.db").string(),
             "UPDATE events SET actor = 'mallory' WHERE seq = " + std::to_string(edited));
  const std::string named = "event seq " + std::to_string(edited) + ": hash mismatch";
  CliRun broken_file = verifyFile(serve);
  CHECK(broken_file.code == 1);
  CHECK(contains(broken_file.out, "audit: BROKEN"));
  CHECK_MESSAGE(contains(broken_file.err, named), broken_file.err);

  serve.start();
  CliRun broken = serve.tide("audit verify");
  CHECK(broken.code == 1);
  CHECK(contains(broken.out, "first broken link: " + named));
  CHECK_MESSAGE(contains(broken.err, named), broken.err);
  json broken_json = verifyJson(serve);
  CHECK(broken_json["ok"] == false);
  CHECK(broken_json["broken"]["seq"] == edited);

  // The API serves (and is ready) while the host checks its invariants at start; the check
  // names the broken link, raises alarm.invariant, and the control loop never starts.
  const auto log = [&] {
    std::stringstream text;
    text << std::ifstream(serve.dataDir() / "serve.log").rdbuf();
    return text.str();
  };
  REQUIRE(eventually([&] { return contains(log(), "the control loop and retention are not started"); }));
  CHECK(contains(log(), "LEDGER INVARIANT VIOLATED: event chain: " + named));
  httplib::Client client(serve.url());
  client.set_bearer_token_auth(serve.token());
  auto ready = client.Get("/readyz");
  REQUIRE(ready);
  CHECK(ready->status == 200);
  auto alarms = client.Get("/v1/events?kind=alarm.invariant");
  REQUIRE(alarms);
  CHECK(json::parse(alarms->body)["items"].size() == 1);
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(contains(metrics->body, "\ntide_reconcile_pass_duration_seconds_count 0\n"));
}

TEST_CASE("cli: audit verify --data-dir of a directory without a ledger says so") {
  TempDir empty;
  CliRun missing = runCli({"audit", "verify", "--data-dir", empty.path().string()});
  CHECK(missing.code == 1);
  CHECK(contains(missing.err, "no ledger at"));
  CHECK(runCli({"audit", "verify", "--data-dir", "a", "--database", "sqlite://b"}).code == 2);
}
