#include <doctest/doctest.h>

#include "drivers/fault/fault_driver.h"
#include "drivers/registry.h"
#include "tests/drivers/driver_test_support.h"

using namespace tide;
using namespace tide::drivers;
using namespace tide::testing;

namespace {

DriverContext contextIn(const TempDir& dir) {
  DriverContext context;
  context.data_dir = dir.path().string();
  const testing::PortRange ports = testing::nextPortRange(21);
  context.port_range_start = ports.start;
  context.port_range_end = ports.end;
  context.tide_binary = TIDE_BINARY;
  return context;
}

}  // namespace

TEST_CASE("driver: registry lists the known kinds and refuses others") {
  std::vector<std::string> kinds;
  for (const DriverKind& kind : driverKinds()) kinds.emplace_back(kind.kind);
  CHECK(kinds == std::vector<std::string>{"process", "container", "sim", "fault", "agent"});

  TempDir dir;
  auto unknown = makeDriver("kubernetes", Json::object(), contextIn(dir));
  CHECK(unknown.status().code() == Code::kInvalidArgument);
  CHECK(unknown.status().message().find("process, container, sim, fault") != std::string::npos);
}

TEST_CASE("driver: registry validates driver_config naming the field") {
  TempDir dir;
  DriverContext context = contextIn(dir);
  CHECK(makeDriver("process", nullptr, context).isOk());
  CHECK(makeDriver("process", {{"stop_grace_seconds", 3}}, context).isOk());
  auto bad = makeDriver("process", {{"stop_grace_seconds", "soon"}, {"colour", "red"}}, context);
  REQUIRE(bad.status().code() == Code::kInvalidArgument);
  REQUIRE(bad.status().details().size() == 2);
  CHECK(bad.status().details()[0].field == "driver_config.colour");
  CHECK(bad.status().details()[1].field == "driver_config.stop_grace_seconds");
  CHECK(makeDriver("process", Json::array(), context).status().code() == Code::kInvalidArgument);

  // Building a container driver runs no podman: a host without it starts, its clusters fail.
  CHECK(makeDriver("container", nullptr, context).isOk());
  CHECK(
      makeDriver("container", {{"runtime", "crun"}, {"ulimit_nofile", 1024}, {"mount_sources", {"/srv/data"}}}, context)
          .isOk());
  auto bad_container = makeDriver(
      "container", {{"ulimit_nproc", 0}, {"pull", "sometimes"}, {"podman", ""}, {"mount_sources", {"relative"}}},
      context);
  REQUIRE(bad_container.status().code() == Code::kInvalidArgument);
  std::vector<std::string> fields;
  for (const ErrorDetail& detail : bad_container.status().details()) fields.push_back(detail.field);
  CHECK(fields == std::vector<std::string>{"driver_config.podman", "driver_config.pull", "driver_config.ulimit_nproc",
                                           "driver_config.mount_sources[0]"});
  CHECK(checkDriverConfig("container", {{"stop_grace_seconds", -1}}).code() == Code::kInvalidArgument);

  auto no_inner = makeDriver("fault", {{"seed", 1}}, context);
  REQUIRE(no_inner.status().code() == Code::kInvalidArgument);
  CHECK(no_inner.status().details().front().field == "driver_config.inner");
  auto bad_inner = makeDriver("fault", {{"inner", "nope"}}, context);
  CHECK(bad_inner.status().code() == Code::kInvalidArgument);
  CHECK(bad_inner.status().message().find("nope") != std::string::npos);
}

TEST_CASE("driver: a fault cluster over processes loses replies yet stays idempotent") {
  ProcessDriverFixture f;  // same <data_dir>/process: its destructor kills what the test started
  DriverContext context = contextIn(f.dir);
  auto made = makeDriver("fault", {{"inner", "process"}, {"seed", 7}, {"lost_reply_rate", 1.0}, {"calls", {"ensure"}}},
                         context);
  REQUIRE_MESSAGE(made.isOk(), made.status().toString());
  Driver& driver = **made;

  RuntimeSpec spec;
  spec.id = "1";
  spec.meta_instance = "web-1";
  spec.node = "node-a";
  spec.coordinates = {{"command", {"/bin/sh", "-c", "echo hello from the fault cluster; exec sleep 300"}}};
  CHECK(driver.ensure(spec).status().code() == Code::kUnavailable);
  CHECK(driver.ensure(spec).status().code() == Code::kUnavailable);  // the retry a caller would make

  auto status = driver.status({"1", "node-a", ""});
  REQUIRE(status.isOk());
  CHECK(status->state == model::WorkloadState::kRunning);
  auto refs = driver.list();
  REQUIRE(refs.isOk());
  CHECK(refs->size() == 1);
  CHECK(eventually([&] {
    auto log = readInstanceLog(driver, "1", 1024);
    return log.isOk() && log->find("hello from the fault cluster") != std::string::npos;
  }));

  REQUIRE(driver.remove({"1", "node-a", ""}).isOk());
  CHECK_FALSE(processAlive(parseHandle(status->handle).pid));
}

TEST_CASE("driver: readInstanceLog refuses drivers without logs") {
  class Silent final : public Driver {
   public:
    Status ensureVolume(const VolumeSpec&) override { return Status::ok(); }
    Status removeVolume(const VolumeRef&) override { return Status::ok(); }
    Result<RuntimeStatus> ensure(const RuntimeSpec&) override { return Status::unavailable("x"); }
    Status stop(const RuntimeRef&) override { return Status::ok(); }
    Status remove(const RuntimeRef&) override { return Status::ok(); }
    Result<RuntimeStatus> status(const RuntimeRef&) override { return Status::notFound("x"); }
    Result<std::vector<RuntimeRef>> list() override { return std::vector<RuntimeRef>{}; }
  };
  Silent silent;
  CHECK(readInstanceLog(silent, "1", 10).status().code() == Code::kUnprocessable);
}

TEST_CASE("driver: checkDriverConfig parses a kind's config and builds nothing") {
  CHECK(checkDriverConfig("sim", Json{{"seed", 7}}).ok());
  CHECK(checkDriverConfig("process", nullptr).ok());
  const Status bad = checkDriverConfig("sim", Json{{"seed", -1}, {"colour", "red"}});
  REQUIRE(bad.code() == Code::kInvalidArgument);
  REQUIRE(bad.details().size() == 2);
  CHECK(bad.details()[0].field == "driver_config.colour");
  CHECK(bad.details()[1].field == "driver_config.seed");
  CHECK(checkDriverConfig("kubernetes", nullptr).details().front().field == "driver_kind");
}

TEST_CASE("driver: every kind's log goes through readLogSlice, wrappers look through") {
  // The sim driver keeps none, and a fault driver around it says so rather than hiding it.
  auto sim = makeDriver("fault", Json{{"inner", "sim"}}, DriverContext{});
  REQUIRE(sim.isOk());
  const Status refused = (*sim)->readLogSlice("1", std::nullopt, 10).status();
  CHECK(refused.code() == Code::kUnprocessable);
  CHECK(refused.message().find("sim driver") != std::string::npos);
}
