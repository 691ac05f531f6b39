// MRDS's README walkthrough against `tide serve`, both as processes, with MRDS's manifests
// as MRDS ships them (examples/mrds/, docs/mrds.md): its nodes, which name no cluster and
// capabilities nobody declared; its plan, which names capabilities no node has; and its
// deployments 1 to 3 (one instance, three, back to one).

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"

namespace {

using Json = nlohmann::json;
using tide::testing::CliRun;
using tide::testing::contains;
using tide::testing::eventually;
using tide::testing::kSourceDir;
using tide::testing::ServeProcess;

std::string mrds(const std::string& name) { return kSourceDir + "/examples/mrds/" + name; }

const char* kShow = "deployment show nginx-deployment-plan -o json";
const char* kApproveAll = "deployment approve-operation nginx-deployment-plan --all";

// `tide deployment show` of MRDS's plan, as JSON.
Json show(const ServeProcess& serve) {
  CliRun shown = serve.tide(kShow);
  REQUIRE_MESSAGE(shown.code == 0, shown.err);
  return Json::parse(shown.out);
}

std::string deploymentState(const ServeProcess& serve, const std::string& id) {
  const Json view = show(serve);
  for (const Json& d : view["deployments"]) {
    if (d["deployment_id"] == id) return d["state"];
  }
  return "";
}

// Approves (as `approver`) whatever the rollout asks for until `id` is COMPLETED.
bool completesApproving(const ServeProcess& serve, const std::string& approver, const std::string& id) {
  return eventually(
      [&] {
        if (deploymentState(serve, id) == "COMPLETED") return true;
        (void)serve.tide(kApproveAll, std::chrono::seconds(0), approver);
        return false;
      },
      std::chrono::seconds(120));
}

}  // namespace

TEST_CASE("mrds: MRDS's README manifests run unchanged, the plan waiting for the capabilities it names") {
  ServeProcess serve;
  serve.actAs(serve.newToken("ops", "admin"));  // alice below is not its own token
  const std::string alice = serve.newToken("alice", "approver");

  // MRDS's nodes: no cluster (they join "default"), capabilities nobody declared (warned).
  CliRun nodes = serve.tide("node create -m " + mrds("node.yaml"));
  REQUIRE_MESSAGE(nodes.code == 0, nodes.err);
  CHECK(contains(nodes.out, "warning: " + mrds("node.yaml") +
                                ":11:9: nodes[0].capabilityIDs[0]: capability 'capability-1' is not declared"));
  Json listed = Json::parse(serve.tide("node list -o json").out);
  REQUIRE(listed["items"].size() == 4);
  for (const Json& node : listed["items"]) {
    CHECK(node["cluster"] == "default");
    CHECK(node["state"] == "ALLOCATED");
  }

  // MRDS's plan: accepted, with a warning per capability nobody declared.
  CliRun plan = serve.tide("deployment create -m " + mrds("deploymentplan.yaml"));
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  CHECK(plan.out.starts_with("Deployment plan created successfully: nginx-deployment-plan\n"));
  for (const char* name : {"nvidia-v100", "nvidia-p100", "intel-xeon"}) {
    CHECK(contains(plan.out, std::string("capability '") + name + "' is not declared"));
  }
  CHECK(contains(serve.tide("events -o json").out, "\"kind\": \"plan.warning\""));

  // deployment-1: its CREATE waits, naming what no node has.
  CliRun first = serve.tide("deployment add-deployment -m " + mrds("deployment-1.yaml"));
  REQUIRE_MESSAGE(first.code == 0, first.err);
  const std::string waiting = "waiting for placement: no node has capabilities nvidia-v100, nvidia-p100, intel-xeon";
  CHECK(eventually([&] { return contains(serve.tide("operations list --plan nginx-deployment-plan").out, waiting); }));

  // Nodes that have them (and the plan's `standard` and `fast-ssd` volumes): it runs.
  CliRun gpus = serve.tide("node create -m " + mrds("gpu-nodes.yaml"));
  REQUIRE_MESSAGE(gpus.code == 0, gpus.err);
  CHECK_MESSAGE(completesApproving(serve, alice, "deployment-1"), show(serve).dump());
  CHECK(show(serve)["instance_summary"]["running"] == 1);

  // deployment-2 scales out to three, deployment-3 back to one.
  REQUIRE(serve.tide("deployment add-deployment -m " + mrds("deployment-2.yaml")).code == 0);
  CHECK_MESSAGE(completesApproving(serve, alice, "deployment-2"), show(serve).dump());
  CHECK(show(serve)["instance_summary"]["running"] == 3);
  REQUIRE(serve.tide("deployment add-deployment -m " + mrds("deployment-3.yaml")).code == 0);
  CHECK_MESSAGE(completesApproving(serve, alice, "deployment-3"), show(serve).dump());
  CHECK(eventually([&] { return show(serve)["instance_summary"]["total"] == 1; }));
  const Json done = show(serve);
  for (const Json& instance : done["instances"]) {
    for (const Json& runtime : instance["runtime_instances"]) {
      if (runtime["state"] == "RUNNING") CHECK(runtime["node"].get<std::string>().starts_with("gpu-worker"));
    }
  }
}
