// GET /v1/instances: each meta instance of the list carries the operation under way or
// waiting on it, so a list shows why an instance does not run (issue 15's CREATE that waits
// for placement) without a request per instance.

#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "tests/api/api_test_support.h"

using namespace tide;
using namespace tide::testing;

TEST_CASE("api: the instance list carries each instance's unfinished operation or null") {
  ApiHarness h;
  addInventoryAndPlan(h);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml").status == 201);
  auto newInstance = [&] {
    auto created = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "test");
    REQUIRE(created.isOk());
    return created->name;
  };
  const std::string done = newInstance(), placing = newInstance(), idle = newInstance();

  model::Operation create;
  create.type = model::OperationType::kCreate;
  create.intent = "deployment-1";
  create.meta_instance = done;
  auto finished = h.ledger->operations().createOperation(create, "test");
  REQUIRE(finished.isOk());
  for (model::OperationState state :
       {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
    REQUIRE(h.ledger->operations().setOperationState(finished->meta.id, state, std::nullopt, "test").isOk());
  }
  create.meta_instance = placing;
  auto waiting = h.ledger->operations().createOperation(create, "test");
  REQUIRE(waiting.isOk());
  ledger::OperationUpdate why;
  why.message = "waiting for placement: no node has capability tpu-v9";
  REQUIRE(h.ledger->operations().updateOperation(waiting->meta.id, why, "engine").isOk());

  Json items = h.get("/v1/instances", kViewerToken).json()["items"];
  REQUIRE(items.size() == 3);
  CHECK(items[0]["meta_instance"]["name"] == done);
  CHECK(items[0]["unfinished_operation"].is_null());  // its only operation SUCCEEDED
  CHECK(items[1]["unfinished_operation"]["metadata"]["id"] == waiting->meta.id);
  CHECK(items[1]["unfinished_operation"]["state"] == "PENDING");
  CHECK(items[1]["unfinished_operation"]["message"] == "waiting for placement: no node has capability tpu-v9");
  CHECK(items[2]["meta_instance"]["name"] == idle);
  CHECK(items[2]["unfinished_operation"].is_null());
  CHECK_FALSE(items[1].contains("operations"));  // the history stays on GET /v1/instances/{name}

  // Page by page, each page's own.
  Json second =
      h.get("/v1/instances?limit=1&after=" + std::to_string(items[0]["meta_instance"]["metadata"]["id"].get<int64_t>()),
            kViewerToken)
          .json();
  REQUIRE(second["items"].size() == 1);
  CHECK(second["items"][0]["unfinished_operation"]["state"] == "PENDING");
}
