// /v1/control: the control loop's halt as the API shows it (the control route, the plan view,
// /metrics) and how only an admin ends it; the partition alarm it shows.

#include <doctest/doctest.h>

#include "tests/api/api_test_support.h"
#include "tests/support/text.h"

namespace tide {
namespace {

using testing::addInventoryAndPlan;
using testing::ApiHarness;
using testing::contains;
using testing::kAdminName;
using testing::kAdminToken;
using testing::kApproverToken;
using testing::kMrdsPlanName;
using testing::kViewerToken;
using testing::Reply;
using Json = nlohmann::json;

void halt(ApiHarness& h) {
  auto halted =
      h.ledger->audit().haltControlLoop("alarm.discrepancy", "6 running instances disagree with their drivers",
                                        Json{{"instances", Json::array({Json{{"instance", "web-1"}}})}}, "observer");
  REQUIRE(halted.isOk());
}

TEST_CASE("api: a halt shows in /v1/control, the plan view and /metrics, and only an admin resumes") {
  ApiHarness h;
  addInventoryAndPlan(h);
  CHECK(h.get("/v1/control", kViewerToken).json() ==
        Json{{"halted", false}, {"halt", nullptr}, {"partition", nullptr}});
  CHECK(h.get("/v1/plans/" + kMrdsPlanName).json()["control_loop"]["halted"] == false);
  CHECK(contains(h.get("/metrics", "").body, "\ntide_control_loop_halted 0\n"));
  CHECK(h.post("/v1/control/resume", "", "").status == 409);

  halt(h);
  Json shown = h.get("/v1/control", kViewerToken).json();
  CHECK(shown["halted"] == true);
  CHECK(shown["halt"]["kind"] == "alarm.discrepancy");
  CHECK(shown["halt"]["by"] == "observer");
  CHECK(shown["halt"]["details"]["instances"][0]["instance"] == "web-1");
  CHECK(h.get("/v1/plans/" + kMrdsPlanName, kViewerToken).json()["control_loop"] == shown);
  const std::string metrics = h.get("/metrics", "").body;
  CHECK(contains(metrics, "\ntide_control_loop_halted 1\n"));
  CHECK(contains(metrics, "\ntide_control_loop_halt_reason{reason=\"alarm.discrepancy\"} 1\n"));

  const int64_t seq = h.lastEventSeq();
  CHECK(h.post("/v1/control/resume", "", "", kApproverToken).status == 403);
  CHECK(h.post("/v1/control/resume", "", "", kViewerToken).status == 403);
  CHECK(h.lastEventSeq() == seq);
  Reply resumed = h.post("/v1/control/resume", "", "", kAdminToken);
  REQUIRE(resumed.status == 200);
  CHECK(resumed.json()["halted"] == false);
  CHECK(resumed.json()["ended"]["kind"] == "alarm.discrepancy");
  Json event = h.get("/v1/events?kind=control.resumed").json()["items"][0];
  CHECK(event["actor"] == kAdminName);
  CHECK(h.get("/v1/control").json()["halted"] == false);
  CHECK(contains(h.get("/metrics", "").body, "\ntide_control_loop_halted 0\n"));
  CHECK(h.post("/v1/control/resume", "", "").status == 409);
}

TEST_CASE("api: /v1/control shows the partition alarm from its alarm.partition event until alarm.cleared") {
  ApiHarness h;
  addInventoryAndPlan(h);
  const Json nodes = Json::array({"n1", "n2"});
  const Json alarm{{"nodes", nodes}, {"message", "cut off"}};
  REQUIRE(h.ledger->audit().appendEvent("alarm.partition", "partition", alarm, "controller").isOk());
  Json shown = h.get("/v1/control", kViewerToken).json();
  CHECK(shown["halted"] == false);  // a partition holds replacement, not the control loop
  CHECK(shown["partition"]["nodes"] == nodes);
  CHECK(shown["partition"]["message"] == "cut off");
  CHECK_FALSE(shown["partition"]["since"].get<std::string>().empty());
  CHECK(h.get("/v1/plans/" + kMrdsPlanName, kViewerToken).json()["control_loop"] == shown);

  REQUIRE(h.ledger->audit()
              .appendEvent("alarm.cleared", "partition", Json{{"alarm", "alarm.partition"}}, "controller")
              .isOk());
  CHECK(h.get("/v1/control", kViewerToken).json()["partition"].is_null());
}

}  // namespace
}  // namespace tide
