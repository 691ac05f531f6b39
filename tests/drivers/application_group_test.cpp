// Instances of plans with several applications (drivers/application_group.h), over a real
// process driver: each application a process of its own, started in order, ended in reverse,
// seen and listed as one instance.
#include "drivers/application_group.h"

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/drivers/driver_test_support.h"

namespace tide::drivers {
namespace {

using tide::testing::awaitLine;
using tide::testing::eventually;
using tide::testing::parseHandle;
using tide::testing::processAlive;
using tide::testing::ProcessDriverFixture;

// A process driver over a fresh state dir, inside the wrapper the host puts around it.
struct GroupFixture {
  ProcessDriverFixture process;
  ProcessDriver* inner = nullptr;
  std::unique_ptr<ApplicationGroupDriver> driver;

  GroupFixture() {
    inner = process.driver.get();
    driver = std::make_unique<ApplicationGroupDriver>(std::move(process.driver));
  }
  ~GroupFixture() { process.driver = nullptr; }

  // One application running `shell_script`, with `port` declared when not 0.
  ApplicationSpec application(const std::string& name, const std::string& shell_script, int port = 0) const {
    ApplicationSpec app;
    app.payload_name = name;
    app.coordinates = {{"command", {"/bin/sh", "-c", shell_script}}};
    if (port != 0) app.ports = {{"TCP", port}};
    return app;
  }

  // Instance `id` of a plan with `applications`, as the executor hands it over.
  RuntimeSpec instance(const std::string& id, std::vector<ApplicationSpec> applications) const {
    RuntimeSpec spec = process.command(id, "exit 0");
    spec.applications = std::move(applications);
    const ApplicationSpec& first = spec.applications.front();
    spec.payload_name = first.payload_name;
    spec.coordinates = first.coordinates;
    spec.ports = first.ports;
    return spec;
  }

  // Instance `id` of web and worker, both sleeping, started; with each application's pid.
  RuntimeSpec startWebAndWorker(const std::string& id, RuntimeStatus& started, pid_t& web, pid_t& worker) {
    RuntimeSpec spec = instance(id, {application("web", "exec sleep 300"), application("worker", "exec sleep 300")});
    auto answer = driver->ensure(spec);
    REQUIRE_MESSAGE(answer.isOk(), answer.status().toString());
    started = *answer;
    web = pidOf(applicationRuntimeId(id, "web"));
    worker = pidOf(applicationRuntimeId(id, "worker"));
    return spec;
  }

  std::vector<std::string> innerIds() {
    std::vector<std::string> ids;
    auto listed = inner->list();
    REQUIRE_MESSAGE(listed.isOk(), listed.status().toString());
    for (const auto& ref : *listed) ids.push_back(ref.id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  pid_t pidOf(const std::string& inner_id) {
    auto status = inner->status({inner_id, "node-a", ""});
    REQUIRE_MESSAGE(status.isOk(), status.status().toString());
    return parseHandle(status->handle).pid;
  }
};

TEST_CASE("application group: an instance of one application is the inner driver's runtime, unchanged") {
  GroupFixture f;
  RuntimeSpec spec = f.instance("7", {f.application("web", "exec sleep 300", 80)});
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(started->handle.rfind("pid:", 0) == 0);
  CHECK(f.innerIds() == std::vector<std::string>{"7"});
  auto listed = f.driver->list();
  REQUIRE(listed.isOk());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().handle == started->handle);
  REQUIRE(f.driver->remove({"7", "node-a", started->handle}).isOk());
  CHECK(f.innerIds().empty());
}

TEST_CASE("application group: every application runs, in order, the later ones told the earlier ones' ports") {
  GroupFixture f;
  const std::string seen = f.process.dir.file("sidecar-saw");
  RuntimeSpec spec = f.instance(
      "8",
      {f.application("web", "exec sleep 300", 8080),
       f.application("shipper", "echo $TIDE_PORT_TCP_8080 $TIDE_PORT_TCP_9100 > " + seen + "; exec sleep 300", 9100)});
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(started->state == model::WorkloadState::kRunning);
  CHECK(f.innerIds() == std::vector<std::string>{"8.shipper", "8.web"});
  // One instance: both applications' ports, and a handle naming each application's runtime.
  REQUIRE(started->ports.contains("tcp/8080"));
  REQUIRE(started->ports.contains("tcp/9100"));
  CHECK(started->handle.rfind("apps: web=pid:", 0) == 0);
  CHECK(started->handle.find(" | shipper=pid:") != std::string::npos);
  CHECK(awaitLine(seen) == std::to_string(started->ports["tcp/8080"].get<int>()) + " " +
                               std::to_string(started->ports["tcp/9100"].get<int>()) + "\n");

  // Listed once, by its runtime id; asked again, the same processes.
  auto listed = f.driver->list();
  REQUIRE(listed.isOk());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().id == "8");
  auto again = f.driver->ensure(spec);
  REQUIRE(again.isOk());
  CHECK(again->handle == started->handle);

  auto status = f.driver->status({"8", "node-a", started->handle});
  REQUIRE(status.isOk());
  CHECK(status->state == model::WorkloadState::kRunning);
  CHECK(status->ports == started->ports);
}

TEST_CASE("application group: an application that exits makes the instance EXITED, naming it, and ensure restarts it") {
  GroupFixture f;
  RuntimeStatus started;
  pid_t web = 0, worker = 0;
  const RuntimeSpec spec = f.startWebAndWorker("9", started, web, worker);
  REQUIRE(kill(worker, SIGKILL) == 0);

  const RuntimeRef ref{"9", "node-a", started.handle};
  Result<RuntimeStatus> status = f.driver->status(ref);
  REQUIRE(eventually([&] {
    status = f.driver->status(ref);
    return status.isOk() && status->state == model::WorkloadState::kExited;
  }));
  CHECK(status->message.rfind("application 'worker'", 0) == 0);
  // In a batch, the same answer.
  auto batch = f.driver->statusAll({ref, ref});
  REQUIRE(batch.isOk());
  REQUIRE(batch->size() == 2);
  CHECK((*batch)[0]->state == model::WorkloadState::kExited);

  auto restarted = f.driver->ensure(spec);
  REQUIRE_MESSAGE(restarted.isOk(), restarted.status().toString());
  CHECK(restarted->state == model::WorkloadState::kRunning);
  CHECK(f.pidOf("9.web") == web);  // still the same process
  CHECK(f.pidOf("9.worker") != worker);
}

TEST_CASE(
    "application group: stop and remove end every application, also of an instance whose handle was never recorded") {
  GroupFixture f;
  RuntimeStatus started;
  pid_t web = 0, worker = 0;
  f.startWebAndWorker("10", started, web, worker);

  SUBCASE("by its handle") {
    REQUIRE(f.driver->stop({"10", "node-a", started.handle}).isOk());
    CHECK(f.driver->status({"10", "node-a", started.handle})->state == model::WorkloadState::kStopped);
    REQUIRE(f.driver->remove({"10", "node-a", started.handle}).isOk());
  }
  SUBCASE("without one (the host died before it wrote it)") {
    auto unrecorded = f.driver->status({"10", "node-a", ""});
    REQUIRE(unrecorded.isOk());
    CHECK(unrecorded->state == model::WorkloadState::kRunning);
    REQUIRE(f.driver->remove({"10", "node-a", ""}).isOk());
  }
  CHECK(eventually([&] { return !processAlive(web) && !processAlive(worker); }));
  CHECK(f.innerIds().empty());
  CHECK(f.driver->status({"10", "node-a", started.handle}).status().code() == Code::kNotFound);
}

TEST_CASE("application group: a start that fails names the application") {
  GroupFixture f;
  ApplicationSpec broken = f.application("worker", "");
  broken.coordinates = {{"command", {"/no/such/program"}}};
  auto started = f.driver->ensure(f.instance("11", {f.application("web", "exec sleep 300"), broken}));
  REQUIRE_FALSE(started.isOk());
  CHECK(started.status().message().find("application 'worker'") != std::string::npos);
}

TEST_CASE("application group: each application's log is read by name, the instance's alone is refused") {
  GroupFixture f;
  RuntimeSpec spec = f.instance("12", {f.application("web", "echo web says hi; exec sleep 300"),
                                       f.application("worker", "echo worker says hi; exec sleep 300")});
  REQUIRE(f.driver->ensure(spec).isOk());
  Result<std::string> worker = Status::notFound("");
  CHECK(eventually([&] {
    worker = readInstanceLog(*f.driver, applicationRuntimeId("12", "worker"), 1024);
    return worker.isOk() && worker->find("worker says hi") != std::string::npos;
  }));
  auto whole = f.driver->readLogSlice("12", std::nullopt, 1024);
  REQUIRE_FALSE(whole.isOk());
  CHECK(whole.status().code() == Code::kInvalidArgument);
  CHECK(whole.status().message().find("web, worker") != std::string::npos);
}

}  // namespace
}  // namespace tide::drivers

namespace tide::drivers {
namespace {

// Takes every spec it is asked to ensure and answers RUNNING.
class RecordingDriver final : public Driver {
 public:
  std::vector<RuntimeSpec> ensured;
  std::vector<std::string> ended;  // the ids stop() and remove() were asked for, in order

  Status ensureVolume(const VolumeSpec&) override { return Status::ok(); }
  Status removeVolume(const VolumeRef&) override { return Status::ok(); }
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override {
    ensured.push_back(spec);
    RuntimeStatus status;
    status.state = model::WorkloadState::kRunning;
    status.handle = "rec:" + spec.id;
    return status;
  }
  Status stop(const RuntimeRef& ref) override {
    ended.push_back(ref.id);
    return Status::ok();
  }
  Status remove(const RuntimeRef& ref) override { return stop(ref); }
  Result<RuntimeStatus> status(const RuntimeRef&) override { return Status::notFound("none"); }
  // What it ensured, in id order (as the process driver lists), not in start order.
  Result<std::vector<RuntimeRef>> list() override {
    std::vector<RuntimeRef> refs;
    for (const RuntimeSpec& spec : ensured) refs.push_back({spec.id, spec.node, "rec:" + spec.id});
    std::sort(refs.begin(), refs.end(), [](const RuntimeRef& a, const RuntimeRef& b) { return a.id < b.id; });
    return refs;
  }
};

TEST_CASE("application group: applications that share a pod are given it, with every member's ports") {
  auto owned = std::make_unique<RecordingDriver>();
  RecordingDriver& recording = *owned;
  ApplicationGroupDriver driver(std::move(owned));
  RuntimeSpec spec;
  spec.id = "5";
  spec.node = "n1";
  spec.applications = {{"web", model::Json::object(), {{"TCP", 80}}, {}, std::nullopt, ""},
                       {"proxy", model::Json::object(), {{"TCP", 8443}}, {}, std::nullopt, "web"},
                       {"batch", model::Json::object(), {}, {}, std::nullopt, ""}};
  REQUIRE(driver.ensure(spec).isOk());
  REQUIRE(recording.ensured.size() == 3);
  for (size_t i : {0, 1}) {
    const RuntimeSpec& part = recording.ensured[i];
    REQUIRE_MESSAGE(part.pod.has_value(), part.id);
    CHECK(part.pod->name == "5.web");
    REQUIRE(part.pod->ports.size() == 2);
    CHECK(part.pod->ports[0].port == 80);
    CHECK(part.pod->ports[1].port == 8443);
  }
  CHECK_FALSE(recording.ensured[2].pod.has_value());  // in no pod
}

TEST_CASE("application group: stop and remove end the applications in reverse start order, whatever list() says") {
  auto owned = std::make_unique<RecordingDriver>();
  RecordingDriver& recording = *owned;
  ApplicationGroupDriver driver(std::move(owned));
  RuntimeSpec spec;
  spec.id = "6";
  spec.node = "n1";
  spec.applications = {{"web", model::Json::object(), {}, {}, std::nullopt, ""},
                       {"proxy", model::Json::object(), {}, {}, std::nullopt, ""},
                       {"batch", model::Json::object(), {}, {}, std::nullopt, ""}};
  auto started = driver.ensure(spec);
  REQUIRE(started.isOk());
  REQUIRE(driver.stop({"6", "n1", started->handle}).isOk());
  CHECK(recording.ended == std::vector<std::string>{"6.batch", "6.proxy", "6.web"});
  recording.ended.clear();
  REQUIRE(driver.remove({"6", "n1", started->handle}).isOk());
  CHECK(recording.ended == std::vector<std::string>{"6.batch", "6.proxy", "6.web"});
}

TEST_CASE("application group: the process driver refuses a pod, and starts nothing") {
  GroupFixture f;
  ApplicationSpec sidecar = f.application("sidecar", "exec sleep 300");
  sidecar.pod = "web";
  auto started = f.driver->ensure(f.instance("13", {f.application("web", "exec sleep 300", 80), sidecar}));
  REQUIRE_FALSE(started.isOk());
  CHECK(started.status().code() == Code::kUnprocessable);
  CHECK(started.status().message().find("runs no pods") != std::string::npos);
  CHECK(f.innerIds().empty());
}

}  // namespace
}  // namespace tide::drivers
