#include <doctest/doctest.h>

#include <cctype>
#include <stdexcept>
#include <string>

#include "host/model/records.h"
#include "host/model/states.h"

using namespace tide::model;
using Json = nlohmann::json;

namespace {

// Every value spells itself back, JSON carries the spelling, and nothing else parses.
template <Vocabulary E>
void checkRoundTrips() {
  const auto values = valuesOf<E>();
  REQUIRE(namesOf<E>().size() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const E value = values[i];
    CHECK(toString(value) == namesOf<E>()[i]);
    CHECK(parse<E>(toString(value)) == value);
    const Json j = value;
    CHECK(j == Json(toString(value)));
    CHECK(j.get<E>() == value);
    std::string lower = toString(value);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    CHECK_FALSE(parse<E>(lower).has_value());
  }
  CHECK_FALSE(parse<E>("").has_value());
}

}  // namespace

TEST_CASE("states: every vocabulary spells each value once and reads back only its own spellings") {
  checkRoundTrips<ClusterState>();
  checkRoundTrips<NodeState>();
  checkRoundTrips<PlanState>();
  checkRoundTrips<DeploymentState>();
  checkRoundTrips<MetaState>();
  checkRoundTrips<RuntimeState>();
  checkRoundTrips<OperationState>();
  checkRoundTrips<OperationType>();
  checkRoundTrips<WorkloadState>();
  checkRoundTrips<TokenState>();
}

TEST_CASE("states: an unknown string read from JSON is an error naming it, never a guess") {
  auto failure = [](const Json& j) -> std::string {
    try {
      (void)j.get<OperationState>();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  CHECK(failure(Json("BOGUS")) == "unknown operation state 'BOGUS'");
  CHECK(failure(Json("running")) == "unknown operation state 'running'");
  CHECK(failure(Json(3)) == "unknown operation state '3'");
}

TEST_CASE("states: records carry their states and types to JSON as the wire strings") {
  Operation op;
  op.type = OperationType::kRelocate;
  op.state = OperationState::kPendingApproval;
  const Json j = op;
  CHECK(j["type"] == "RELOCATE");
  CHECK(j["state"] == "PENDING_APPROVAL");
  CHECK(Json(Node{})["state"] == "UNALLOCATED");
  CHECK(Json(Cluster{})["state"] == "ACTIVE");
  CHECK(Json(Deployment{})["state"] == "PENDING");
  CHECK(Json(RuntimeInstance{})["state"] == "PENDING");
  CHECK(Json(MetaInstance{})["state"] == "ACTIVE");
  CHECK(Json(Plan{})["state"] == "ACTIVE");
}
