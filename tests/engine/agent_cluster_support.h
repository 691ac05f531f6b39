#pragma once
// An engine over a node agents' cluster (docs/agents.md) for engine tests: cluster "edge" of
// node edge-1 whose driver is the agent driver over a hub of its own, served by a FakeAgent
// (tests/drivers/fake_agent.h), beside EngineFixture's process cluster.
//
// The hub measures heartbeats on a clock of its own, so a test may advance the engine's
// clock (past an orphan's grace period, say) without the node going UNREACHABLE. Members are
// destroyed in reverse order: the engine first, while the agent still confirms what the
// fixture's teardown removes, then the agent, then the hub.

#include <memory>
#include <string>
#include <vector>

#include "drivers/agent/agent_driver.h"
#include "drivers/agent/agent_hub.h"
#include "tests/drivers/fake_agent.h"
#include "tests/engine/sim_test_support.h"

namespace tide::testing {

inline const std::string kAgentNode = "edge-1";

struct AgentClusterFixture {
  tide::testing::TempDir hub_dir;
  FakeClock hub_clock{std::chrono::system_clock::now(), FakeClock::Flow::kRealTime};
  std::unique_ptr<drivers::AgentHub> hub;
  std::unique_ptr<FakeAgent> agent;
  EngineFixture f;

  explicit AgentClusterFixture(engine::EngineOptions options = EngineFixture::fastOptions())
      : hub(openHub(hub_dir, hub_clock)),
        agent(std::make_unique<FakeAgent>(*hub, kAgentNode)),
        f({"auto_approve_dev.lua"}, options) {
    f.apply(std::string(kSimCapabilities) + "clusters:\n  - {name: edge, driver: agent}\nnodes:\n  - {name: " +
            kAgentNode +
            ", cluster: edge, update_domain: ud-1, total: {cores: 2, memory_gib: 4}, capabilities: [intel-xeon]}\n");
    drivers::AgentDriverOptions driver_options;
    driver_options.cluster = "edge";
    driver_options.cluster_nodes = [] { return std::vector<std::string>{kAgentNode}; };
    f.drivers->install("edge", std::make_unique<drivers::AgentDriver>(*hub, driver_options));
  }

  // Rolls out plan web (no health check: the fake agent reports none) with `count` instances.
  void rollOut(int count) {
    f.apply(simPlanWith(""));
    f.apply(engineDeployment("v1", count, "1"));
    f.engine->settle();
  }

  // The ids the node's document lists, wanted running or stopped.
  std::vector<std::string> documentIds() const {
    std::vector<std::string> ids;
    for (const auto& instance : hub->document(kAgentNode).instances) ids.push_back(instance.spec.id);
    return ids;
  }

 private:
  static std::unique_ptr<drivers::AgentHub> openHub(const tide::testing::TempDir& dir, const Clock& clock) {
    auto opened = drivers::AgentHub::open(dir.path().string(), clock, {std::chrono::seconds(10)});
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    return std::move(opened).value();
  }
};

}  // namespace tide::testing
