// `tide deployment update -m PLAN.yaml` (host/cli/deployment_commands.cpp) against a real
// API server: what changed, warnings with the file's lines, a stale --generation, a change
// that would strand instances, each refusal leaving the plan as it was.

#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"

namespace {

using Json = nlohmann::json;
using tide::testing::CliRun;
using tide::testing::contains;
using tide::testing::example;
using tide::testing::LiveServer;
using tide::testing::TempDir;

// examples/<source> with `from` replaced by `to`, written to `dir`.
std::string editedPlan(const TempDir& dir, const std::string& from, const std::string& to,
                       const std::string& name = "plan.yaml", const std::string& source = "nginx-plan.yaml") {
  std::ifstream in(example(source));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << text;
  return path;
}

Json planJson(const LiveServer& live) {
  return Json::parse(live.run({"deployment", "show", "nginx-deployment-plan", "-o", "json"}).out)["plan"];
}

}  // namespace

TEST_CASE("cli: deployment update changes a plan for the next deployment and says what changed") {
  LiveServer live;
  TempDir dir;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}).code == 0);

  const std::string bigger = editedPlan(dir, "cores: 4", "cores: 8");
  CliRun updated = live.run({"deployment", "update", "-m", bigger, "--generation", "1"});
  REQUIRE_MESSAGE(updated.code == 0, updated.err);
  CHECK(updated.out.starts_with("Deployment plan updated: nginx-deployment-plan (generation 2; changed "
                                "applications; deployments added from now on use it)\n\nDeployment Plan Info\n"));
  CHECK(planJson(live)["applications"][0]["resources"]["cores"] == 8.0);

  CliRun again = live.run({"deployment", "update", "-m", bigger});
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(again.out.starts_with("Deployment plan unchanged: nginx-deployment-plan\n"));

  // A capability nobody declared: applied, with a warning at the file's line.
  const std::string tpu = editedPlan(dir, "\"intel-xeon\"]", "\"intel-xeon\", \"tpu-v9\"]", "tpu.yaml");
  CliRun warned = live.run({"deployment", "update", "-m", tpu});
  REQUIRE_MESSAGE(warned.code == 0, warned.err);
  CHECK(contains(warned.out, "warning: matching_capabilities[1].names: capability 'tpu-v9' is not declared"));

  // Refusals: a stale generation, a namespace that would change; the plan stays as it was.
  const Json before = planJson(live);
  CliRun stale = live.run({"deployment", "update", "-m", bigger, "--generation", "1"});
  CHECK(stale.code == 1);
  CHECK(contains(stale.err, "If-Match names generation 1, the plan is now at 3"));
  const std::string moved = editedPlan(dir, "nginx-namespace", "other-namespace", "moved.yaml");
  CliRun refused = live.run({"deployment", "update", "-m", moved});
  CHECK(refused.code == 1);
  CHECK(contains(refused.err, "namespace cannot change"));
  CHECK(planJson(live) == before);
}

TEST_CASE("cli: deployment update takes MRDS's plans: list, the file deployment create took") {
  LiveServer live;
  TempDir dir;
  REQUIRE(live.run({"deployment", "create", "-m", example("mrds/deploymentplan.yaml")}).code == 0);
  const std::string bigger =
      editedPlan(dir, "cores: 4", "cores: 6", "deploymentplan.yaml", "mrds/deploymentplan.yaml");
  CliRun updated = live.run({"deployment", "update", "-m", bigger});
  REQUIRE_MESSAGE(updated.code == 0, updated.err);
  CHECK(updated.out.starts_with("Deployment plan updated: nginx-deployment-plan (generation 2; changed applications"));
  CHECK(contains(updated.out, "capability 'nvidia-v100' is not declared"));
  CHECK(planJson(live)["applications"][0]["resources"]["cores"] == 6.0);

  CliRun nodes = live.run({"deployment", "update", "-m", example("mrds/node.yaml")});
  CHECK(nodes.code == 1);
  CHECK(contains(nodes.err, "takes plans only"));
}

TEST_CASE("cli: deployment scale and set-image add a deployment from the current one, -o json prints it") {
  LiveServer live;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}).code == 0);

  CliRun scaled = live.run({"deployment", "scale", "nginx-deployment-plan", "--instances", "2"});
  REQUIRE_MESSAGE(scaled.code == 0, scaled.err);
  CHECK(scaled.out ==
        "Deployment added successfully: deployment-2 (2 instances, from deployment-1)\n"
        "It rolls out through the plan's strategy: tide deployment watch nginx-deployment-plan\n");
  CliRun same = live.run({"deployment", "scale", "nginx-deployment-plan", "--instances", "2"});
  CHECK(same.code == 1);
  CHECK(contains(same.err, "asks for 2 instances already; nothing to change"));

  CliRun imaged = live.run({"deployment", "set-image", "nginx-deployment-plan", "nginx-payload=1.27", "--deployment-id",
                            "v127", "-o", "json"});
  REQUIRE_MESSAGE(imaged.code == 0, imaged.err);
  const Json added = Json::parse(imaged.out);
  CHECK(added["deployment_id"] == "v127");
  CHECK(added["from_deployment"] == "deployment-2");
  CHECK(added["instance_count"] == 2);
  CHECK(added["payload_coordinates"][0]["coordinates"]["image"] == "nginx:1.27");

  CliRun malformed = live.run({"deployment", "set-image", "nginx-deployment-plan", "nginx-payload"});
  CHECK(malformed.code != 0);
  CHECK(contains(malformed.err, "is not PAYLOAD=IMAGE"));
  CliRun unknown = live.run({"deployment", "set-image", "nginx-deployment-plan", "web=1.2"});
  CHECK(unknown.code == 1);
  CHECK(contains(unknown.err, "has no payload 'web'"));
}

TEST_CASE("cli: plan diff and --dry-run say what an apply would do and write nothing") {
  LiveServer live;
  TempDir dir;
  REQUIRE(live.run({"node", "create", "-m", example("nodes.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "create", "-m", example("nginx-plan.yaml")}).code == 0);
  REQUIRE(live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml")}).code == 0);
  const std::string events = live.run({"events", "-o", "json"}).out;

  const std::string changed = editedPlan(dir, "cores: 4", "cores: 2");
  CliRun diff = live.run({"plan", "diff", "-m", changed});
  REQUIRE_MESSAGE(diff.code == 0, diff.err);
  CHECK(contains(diff.out, "update"));
  CHECK(contains(diff.out, "applications"));
  CHECK(contains(diff.out, "Dry run: nothing was written."));
  CliRun diff_json = live.run({"plan", "diff", "-m", changed, "-o", "json"});
  REQUIRE(diff_json.code == 0);
  CHECK(Json::parse(diff_json.out)["changes"][0]["action"] == "update");

  CliRun create = live.run({"deployment", "create", "-m", example("nginx-plan.yaml"), "--dry-run"});
  REQUIRE_MESSAGE(create.code == 0, create.err);
  CHECK(contains(create.out, "unchanged"));

  CliRun update = live.run({"deployment", "update", "-m", changed, "--dry-run"});
  REQUIRE_MESSAGE(update.code == 0, update.err);
  CHECK(contains(update.out, "Deployment plan nginx-deployment-plan would change: applications"));

  CliRun scale = live.run({"deployment", "scale", "nginx-deployment-plan", "--instances", "3", "--dry-run"});
  REQUIRE_MESSAGE(scale.code == 0, scale.err);
  CHECK(contains(scale.out, "Deployment deployment-2 (3 instances, from deployment-1) would roll out:"));
  CHECK(contains(scale.out, "strategy rolling, 3 instances"));
  CHECK(contains(scale.out, "approvals: the host runs without scripts"));
  CHECK(contains(scale.out, "Dry run: nothing was written."));
  CliRun image = live.run({"deployment", "set-image", "nginx-deployment-plan", "nginx-payload=1.27", "--dry-run"});
  REQUIRE_MESSAGE(image.code == 0, image.err);
  CHECK(contains(image.out, "would roll out"));

  CliRun add = live.run({"deployment", "add-deployment", "-m", example("deployment-1.yaml"), "--dry-run"});
  CHECK(add.code == 1);  // refused as the real call would be: deployment-1 exists
  CHECK(contains(add.err, "deployment-1"));

  // Not one event since the first apply: nothing was written.
  CHECK(live.run({"events", "-o", "json"}).out == events);
  CHECK(Json::parse(live.run({"deployment", "show", "nginx-deployment-plan", "-o", "json"})
                        .out)["plan"]["applications"][0]["resources"]["cores"] == 4);
}
