// Crash safety (docs/architecture.md#crash-recovery): `kill -9` of `tide serve` at several points of a
// rollout, then a restart, finishes the rollout with no duplicate processes, no leaked
// reservations and no lost operations. Real host process, real ledger file, real
// workloads. The host kills itself at a failpoint (docs/architecture.md#failpoints), so each
// kill lands exactly at its step of the rollout.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/drivers/container_test_support.h"
#include "tests/drivers/driver_test_support.h"
#include "tests/engine/engine_test_support.h"
#include "tests/support/files.h"
#include "tests/support/serve_child.h"
#include "tests/support/workloads.h"

namespace tide {
namespace {

using Json = nlohmann::json;

class CrashingHost {
 public:
  explicit CrashingHost(const testing::TempDir& dir) : dir_(dir) {
    port_ = testing::freePort();
    // Strategies run at every pass and on apply: a loaded machine must not time them out.
    std::ofstream config(dir_.file("tide.yaml"));
    config << "listen: 127.0.0.1:" << port_ << "\n"
           << "data_dir: " << dir_.file("data") << "\n"
           << "policies_dir: " << dir_.file("policies") << "\n"
           << "scripts_dir: " << TIDE_SOURCE_DIR << "/scripts\n"
           << "process: {port_range_start: " << ports_.start << ", port_range_end: " << ports_.end << "}\n"
           << "limits: {reconcile_interval_ms: 100, lua_deadline_ms: 2000}\n";
    std::filesystem::create_directories(dir_.file("policies"));
    std::filesystem::copy_file(std::string(TIDE_SOURCE_DIR) + "/policies/auto_approve_dev.lua",
                               dir_.file("policies") + "/auto_approve_dev.lua",
                               std::filesystem::copy_options::overwrite_existing);
  }
  ~CrashingHost() { kill(SIGTERM); }

  // Starts the host with `failpoints` armed (TIDE_FAILPOINTS; empty: none).
  void start(const std::string& failpoints = "") {
    const std::string log = dir_.file("serve.log");
    const std::string config = dir_.file("tide.yaml");
    pid_ = testing::spawnServe(TIDE_BINARY, config, log, failpoints);
    REQUIRE(pid_ >= 0);
    // A start after kill -9 checks the ledger and loads every script (running their tests)
    // before it serves: on a loaded machine that took more than 30 s once. A host that
    // exited meanwhile fails at once.
    bool exited = false;
    REQUIRE_MESSAGE(testing::eventually(
                        [&] {
                          int status = 0;
                          exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
                          auto reply = client().Get("/healthz");
                          return exited || (reply && reply->status == 200);
                        },
                        std::chrono::seconds(120)),
                    "tide serve did not start in 120 s; its log:\n" << testing::fileTail(log));
    if (exited) pid_ = -1;
    REQUIRE_MESSAGE(!exited, "tide serve exited at start; its log:\n" << testing::fileTail(log));
    std::ifstream(dir_.file("data") + "/admin.token") >> token_;
    REQUIRE(!token_.empty());
  }

  // Whether the host died (a failpoint killed it) within `limit`; reaps it then.
  bool diesWithin(std::chrono::seconds limit) {
    const bool died = testing::eventually(
        [&] {
          int status = 0;
          return ::waitpid(pid_, &status, WNOHANG) == pid_;
        },
        limit);
    if (died) pid_ = -1;
    return died;
  }

  void kill(int signal) { testing::killAndReap(pid_, signal); }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(std::chrono::milliseconds(300));
    c.set_read_timeout(std::chrono::seconds(5));
    if (!token_.empty()) c.set_bearer_token_auth(token_);
    return c;
  }

  Json get(const std::string& path) const {
    auto reply = client().Get(path);
    if (!reply || reply->status != 200) return nullptr;
    return Json::parse(reply->body, nullptr, false);
  }

  void apply(const std::string& yaml) const {
    auto reply = client().Post("/v1/manifests", yaml, "application/yaml");
    REQUIRE(reply);
    REQUIRE_MESSAGE(reply->status < 300, reply->body);
  }

 private:
  const testing::TempDir& dir_;
  int port_ = 0;
  testing::PortRange ports_ = testing::nextPortRange(50);
  pid_t pid_ = -1;
  std::string token_;
};

TEST_CASE("engine: kill -9 of the host at any point of a rollout, then a restart, finishes it cleanly") {
  // Each point is a failpoint that kills the host while the rollout of three instances is
  // under way, before its third process is recorded: around a volume, and before or after a
  // process starts (after: the ledger has not heard of it yet).
  const char* const points[] = {"driver.ensure_volume.after=kill@1", "driver.ensure_volume.before=kill@2",
                                "driver.ensure.before=kill@1", "driver.ensure.after=kill@1",
                                "driver.ensure.after=kill@3"};
  for (const char* point : points) {
    CAPTURE(point);
    {
      testing::TempDir dir;
      const std::string data_dir = dir.file("data");
      const testing::WorkloadsReaper reaper{data_dir};
      {
        CrashingHost host(dir);
        host.start(point);
        host.apply(testing::kEngineNodes);
        host.apply(testing::enginePlan("web-dev"));
        host.apply(testing::engineDeployment("d1", 3, "1.0"));
        REQUIRE_MESSAGE(host.diesWithin(std::chrono::seconds(90)),
                        "the failpoint did not fire; its log:\n" << testing::fileTail(dir.file("serve.log")));

        host.start();
        REQUIRE_MESSAGE(testing::eventually(
                            [&] {
                              Json d = host.get("/v1/plans/web/deployments/d1");
                              return d.is_object() && d.value("state", "") == "COMPLETED";
                            },
                            std::chrono::seconds(90)),
                        "the rollout did not finish after the restart; its log:\n"
                            << testing::fileTail(dir.file("serve.log")));
        host.kill(SIGTERM);
      }

      // The ledger, read directly: three active RUNNING instances and nothing else alive,
      // every operation finished and succeeded, the invariants hold.
      SystemClock clock;
      auto opened = ledger::Ledger::open("sqlite://" + data_dir + "/tide.db", clock);
      REQUIRE(opened.isOk());
      auto& ledger = *opened.value();
      auto invariants = ledger.checkInvariants();
      REQUIRE(invariants.isOk());
      CHECK_MESSAGE(invariants->empty(), (invariants->empty() ? "" : invariants->front()));
      ledger::ListOptions all;
      all.limit = ledger::kMaxPageSize;
      auto runtimes = ledger.instances().listRuntimeInstances(all);
      REQUIRE(runtimes.isOk());
      std::set<std::string> metas;
      for (const auto& r : runtimes->items) {
        if (r.state == model::RuntimeState::kTerminated || r.state == model::RuntimeState::kFailed) continue;
        CHECK_MESSAGE(r.state == model::RuntimeState::kRunning,
                      "runtime " << r.meta.id << " is " << r.state);  // no leaked reservation
        CHECK(r.is_active);
        metas.insert(r.meta_instance);
      }
      CHECK(metas.size() == 3);
      auto operations = ledger.operations().listOperations(all);
      REQUIRE(operations.isOk());
      int created = 0;
      for (const auto& op : operations->items) {
        CHECK_MESSAGE(op.state == model::OperationState::kSucceeded,
                      "operation " << op.meta.id << " " << op.type << " is " << op.state);
        created += op.type == model::OperationType::kCreate;
      }
      CHECK(created == 3);
      // One process per instance: none started twice, none left behind.
      CHECK(testing::workloadsOf(data_dir).size() == 3);
    }
  }
}

TEST_CASE("engine: kill -9 of the host leaves its containers serving, and the restarted host adopts them") {
  if (TIDE_PODMAN_MISSING()) return;
  testing::TestImage image;
  testing::TempDir dir;
  const std::string home = std::filesystem::path(dir.file("data") + "/container").lexically_normal().string();
  testing::ContainerSweep sweep(home);
  CrashingHost host(dir);
  host.start();
  host.apply(testing::containerPlan(2, 0.5));
  host.apply(testing::containerDeployment("d1", image.ref(), 2));
  auto completed = [&] {
    Json d = host.get("/v1/plans/web/deployments/d1");
    return d.is_object() && d.value("state", "") == "COMPLETED";
  };
  REQUIRE_MESSAGE(testing::eventually(completed, std::chrono::seconds(120)),
                  "d1 did not complete; the host's log:\n"
                      << testing::fileTail(dir.file("serve.log")));
  auto running_ids = [&] {
    std::istringstream listed(
        testing::podmanRun({"ps", "-q", "--no-trunc", "--filter", "label=tide.home=" + home}).output);
    std::set<std::string> ids;
    for (std::string id; listed >> id;) ids.insert(id);
    return ids;
  };
  const std::set<std::string> before = running_ids();
  REQUIRE(before.size() == 2);

  host.kill(SIGKILL);
  CHECK(running_ids() == before);  // the containers outlive their host

  host.start();
  auto instances_ready = [&] {
    Json view = host.get("/v1/plans/web");
    return view.is_object() && view["instance_summary"].value("running", 0) == 2 &&
           view["instance_summary"].value("ready", 0) == 2;
  };
  REQUIRE(testing::eventually(instances_ready, std::chrono::seconds(120)));
  // Adopted: the same two containers, and each instance still on its first runtime instance.
  CHECK(running_ids() == before);
  Json listed = host.get("/v1/instances?plan=web");
  REQUIRE(listed.is_object());
  REQUIRE(listed["items"].size() == 2);
  for (const Json& item : listed["items"]) CHECK(item["runtime_instances"].size() == 1);
  host.kill(SIGTERM);
}

}  // namespace
}  // namespace tide
