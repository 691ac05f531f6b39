// `tide serve --stop-workloads-on-exit` (docs/architecture.md#stopping-workloads-on-exit), with
// real workload processes: the host stops them on SIGTERM and records them STOPPED, and the
// next host starts without a discrepancy halt and restarts them through approval.

#include <chrono>
#include <string>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"
#include "tests/support/workloads.h"

using namespace tide::testing;
using Json = nlohmann::json;

namespace {

const std::string kExamples = std::string(TIDE_SOURCE_DIR) + "/examples/";

Json getJson(const ServeProcess& host, const std::string& path) {
  httplib::Client client(host.url());
  client.set_read_timeout(std::chrono::seconds(60));
  auto reply = client.Get(path, {{"Authorization", "Bearer " + host.token()}});
  REQUIRE(reply);
  REQUIRE_MESSAGE(reply->status == 200, reply->body);
  return Json::parse(reply->body);
}

// The plan's runtime instances in `state`, counted over its live meta instances.
int runtimesIn(const ServeProcess& host, const std::string& plan, const std::string& state) {
  CliRun listed = host.tide("instances list --plan " + plan + " -o json");
  if (listed.code != 0) return -1;
  const Json instances = Json::parse(listed.out);
  int count = 0;
  for (const auto& meta : instances["items"]) {
    for (const auto& runtime : meta["runtime_instances"]) count += runtime["state"] == state ? 1 : 0;
  }
  return count;
}

// How many of the plan's operations are of `type` and in `state`.
int operationsOf(const ServeProcess& host, const std::string& plan, const std::string& type, const std::string& state) {
  CliRun listed = host.tide("operations list --plan " + plan + " -o json");
  if (listed.code != 0) return -1;
  const Json operations = Json::parse(listed.out);
  int count = 0;
  for (const auto& op : operations["items"]) count += op["type"] == type && op["state"] == state ? 1 : 0;
  return count;
}

}  // namespace

TEST_CASE("serve --stop-workloads-on-exit stops the workloads, and the next start restarts them without a halt") {
  // A threshold below the three instances: had the host not recorded what it stopped, the next
  // one would find three RUNNING instances gone and halt.
  ServeProcess host("limits: {discrepancy_threshold: 1}\n", {"--stop-workloads-on-exit"});
  REQUIRE(host.tide("node create -m " + kExamples + "nodes.yaml").code == 0);
  REQUIRE(host.tide("deployment create -m " + kExamples + "nginx-dev-plan.yaml").code == 0);
  REQUIRE(host.tide("deployment add-deployment -m " + kExamples + "dev-deployment.yaml").code == 0);
  const std::string data_dir = host.dataDir().string();
  // Until the rollout completed: an instance whose operation is still RUNNING is left to it.
  REQUIRE(host.tide("deployment watch nginx-dev-plan", std::chrono::seconds(300)).code == 0);
  REQUIRE(runtimesIn(host, "nginx-dev-plan", "RUNNING") == 3);
  REQUIRE(workloadsOf(data_dir).size() == 3);

  REQUIRE(host.stop() == 0);
  CHECK(eventually([&] { return workloadsOf(data_dir).empty(); }, std::chrono::seconds(60)));

  host.start();
  const Json control = getJson(host, "/v1/control");
  CHECK(control["halted"] == false);
  const Json events = getJson(host, "/v1/events?kind=host.workloads_stopped");
  REQUIRE(events["items"].size() == 1);
  CHECK(events["items"][0]["data"]["count"] == 3);
  // In nginx-dev the dev policy approves the RESTARTs: the same instances run again.
  CHECK(eventually([&] { return runtimesIn(host, "nginx-dev-plan", "RUNNING") == 3; }, std::chrono::seconds(120)));
  CHECK(eventually([&] { return workloadsOf(data_dir).size() == 3; }, std::chrono::seconds(60)));
  CHECK(eventually([&] { return operationsOf(host, "nginx-dev-plan", "RESTART", "SUCCEEDED") == 3; },
                   std::chrono::seconds(120)));
  CHECK(getJson(host, "/v1/control")["halted"] == false);
}
