// `tide doctor` against a real `tide serve` and its data dir (docs/architecture.md#tide-doctor):
// a sound fleet passes both ways; a runtime planted in the process driver's state behind the
// ledger's back is named as a leak, with exit code 1, by the command and by the host's start.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "drivers/registry.h"
#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"
#include "tests/support/files.h"
#include "tests/support/text.h"

using namespace tide;
using namespace tide::testing;
using nlohmann::json;

namespace {

const char* kLocalNodes = R"(
capabilities:
  - {name: intel-xeon, type: CPU, score: 10}
clusters:
  - {name: local, driver: process}
nodes:
  - {name: worker-1, cluster: local, update_domain: ud-1, total: {cores: 8, memory_gib: 16}, capabilities: [intel-xeon]}
)";

// Runs a process for runtime `id` on worker-1 through a process driver of the data dir, as a
// host killed before it recorded the runtime would leave it.
void plantRuntime(const ServeProcess& serve, const std::string& id) {
  drivers::DriverContext context;
  context.data_dir = serve.dataDir().string();
  context.cluster = "local";
  const PortRange ports = nextPortRange(5);
  context.port_range_start = ports.start;
  context.port_range_end = ports.end;
  auto driver = drivers::makeDriver("process", json::object(), context);
  REQUIRE_MESSAGE(driver.isOk(), driver.status().toString());
  drivers::RuntimeSpec spec;
  spec.id = id;
  spec.meta_instance = "planted";
  spec.node = "worker-1";
  spec.payload_name = "web";
  spec.coordinates = {{"command", {"sleep", "300"}}};
  auto ran = (*driver)->ensure(spec);
  REQUIRE_MESSAGE(ran.isOk(), ran.status().toString());
}

}  // namespace

TEST_CASE("cli: tide doctor passes a sound host and names a leaked runtime, through the host and from the data dir") {
  ServeProcess serve;
  std::ofstream(serve.dataDir() / "nodes.yaml") << kLocalNodes;
  REQUIRE(serve.tide("node create -m " + (serve.dataDir() / "nodes.yaml").string()).code == 0);

  CliRun sound = serve.tide("doctor");
  CHECK_MESSAGE(sound.code == 0, sound.err);
  CHECK(contains(sound.out, "doctor: OK: 0 violation(s), 0 warning(s)"));
  json sound_json = json::parse(serve.tide("doctor -o json").out, nullptr, false);
  REQUIRE(sound_json.is_object());
  CHECK(sound_json["sound"] == true);
  CHECK(sound_json["checked"]["clusters"] == 1);

  serve.stop();
  plantRuntime(serve, "9999");
  const std::string data_dir = serve.dataDir().string();
  const std::string config = (serve.dataDir() / "tide.yaml").string();
  CliRun leak = runCli({"doctor", "--data-dir", data_dir, "--config", config});
  CHECK(leak.code == 1);
  CHECK(contains(leak.out, "runtime/9999"));
  CHECK(contains(leak.out, "no record"));
  CHECK(contains(leak.out, "doctor: VIOLATED: 1 violation(s)"));
  CHECK(contains(leak.err, "the doctor found 1 violation(s)"));
  json leak_json = json::parse(runCli({"doctor", "--data-dir", data_dir, "--config", config, "-o", "json"}).out,
                               nullptr, false);
  REQUIRE(leak_json.is_object());
  REQUIRE(leak_json["findings"].size() == 1);
  CHECK(leak_json["findings"][0]["kind"] == "leak");
  CHECK(leak_json["findings"][0]["severity"] == "violation");

  // At start the host says so and raises alarm.inventory, but its control loop runs: the
  // observer removes what the ledger does not know.
  serve.start();
  const auto log = [&] {
    std::stringstream text;
    text << std::ifstream(serve.dataDir() / "serve.log").rdbuf();
    return text.str();
  };
  // The API serves while the checks run, and the log holds the first start's lines too:
  // the second "tide listening on" comes after this start's checks.
  const auto starts = [&] {
    const std::string text = log();
    size_t n = 0;
    for (size_t at = text.find("tide listening on"); at != std::string::npos; at = text.find("tide listening on", at + 1)) ++n;
    return n;
  };
  REQUIRE(eventually([&] { return starts() == 2; }));
  CHECK(contains(log(), "DRIVER INVENTORY DISAGREES WITH THE LEDGER: leak: cluster local runs runtime 9999"));
  CHECK_FALSE(contains(log(), "the control loop and retention are not started"));
  httplib::Client client(serve.url());
  client.set_bearer_token_auth(serve.token());
  std::string alarms;
  CHECK_MESSAGE(eventually([&] {
                  auto reply = client.Get("/v1/events?kind=alarm.inventory");
                  alarms = reply ? std::to_string(reply->status) + " " + reply->body : "no reply";
                  return contains(alarms, "runtime 9999");
                }),
                alarms);
  CliRun online = serve.tide("doctor");
  CHECK(online.code == 1);
  CHECK(contains(online.out, "runtime/9999"));
}

TEST_CASE("cli: tide doctor --data-dir of a directory without a ledger says so and creates none") {
  const std::filesystem::path empty = freshDir("doctor", "empty");
  CliRun missing = runCli({"doctor", "--data-dir", empty.string()});
  CHECK(missing.code == 1);
  CHECK(contains(missing.err, "no ledger at"));
  CHECK_FALSE(std::filesystem::exists(empty / "tide.db"));
  std::filesystem::remove_all(empty);
}
