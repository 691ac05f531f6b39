// `tide capability show|delete NAME` and `tide cluster show|delete NAME` against `tide serve`:
// a record still in use is refused with the server's reason.

#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"

using namespace tide::testing;

TEST_CASE("cli: capabilities and clusters are shown and deleted, unless something still uses them") {
  ServeProcess serve;
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);

  CliRun capability = serve.tide("capability show nvidia-t4");
  REQUIRE_MESSAGE(capability.code == 0, capability.err);
  CHECK(contains(capability.out, "Capability Name"));
  CHECK(contains(capability.out, "nvidia-t4"));
  CHECK(nlohmann::json::parse(serve.tide("capability show nvidia-t4 -o json").out)["score"] == 50);
  CliRun cluster = serve.tide("cluster show local");
  REQUIRE_MESSAGE(cluster.code == 0, cluster.err);
  CHECK(contains(cluster.out, "Cluster Name"));
  CHECK(contains(cluster.out, "local"));

  CliRun used = serve.tide("capability delete nvidia-v100");
  CHECK(used.code == 1);
  CHECK(used.err == "error: capability 'nvidia-v100' is still used by 2 node(s)\n");
  CliRun populated = serve.tide("cluster delete local");
  CHECK(populated.code == 1);
  CHECK(populated.err == "error: cluster 'local' still has 4 node(s)\n");

  CliRun unused = serve.tide("capability delete nvidia-t4");
  REQUIRE_MESSAGE(unused.code == 0, unused.err);
  CHECK(unused.out == "Capability nvidia-t4 deleted\n");
  CliRun gone = serve.tide("capability show nvidia-t4");
  CHECK(gone.code == 1);
  CHECK(gone.err == "error: capability 'nvidia-t4' not found\n");

  for (const char* node : {"kind-worker", "kind-worker2", "kind-worker3", "kind-worker4"}) {
    REQUIRE(serve.tide(std::string("node delete ") + node).code == 0);
  }
  CliRun emptied = serve.tide("cluster delete local -o json");
  REQUIRE_MESSAGE(emptied.code == 0, emptied.err);
  CHECK(nlohmann::json::parse(emptied.out) ==
        nlohmann::json{{"deleted", true}, {"kind", "cluster"}, {"name", "local"}});
  CHECK(serve.tide("capability delete nvidia-v100").out == "Capability nvidia-v100 deleted\n");
}
