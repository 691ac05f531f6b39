// The container driver against real Podman (drivers/container/): nothing is mocked. Each test
// builds its busybox image, runs its containers under a fresh state dir and removes both at
// the end, also when it fails. Skipped, saying why, where podman cannot run.
#include "drivers/container/container_driver.h"

#include "drivers/application_group.h"

#include <signal.h>

#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "drivers/container/container_log.h"
#include "tests/drivers/container_test_support.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/temp_dir.h"

using namespace tide;
using namespace tide::drivers;
using tide::testing::containersLabelled;
using tide::testing::ContainerSweep;
using tide::testing::eventually;
using tide::testing::podmanRun;
using tide::testing::TempDir;
using tide::testing::TestImage;

namespace {

// A container driver over a fresh state dir, its containers removed when the test ends.
struct ContainerDriverFixture {
  TempDir dir;
  ContainerDriverOptions options;
  std::unique_ptr<ContainerSweep> sweep;
  std::unique_ptr<ContainerDriver> driver;

  explicit ContainerDriverFixture(const std::string& cluster = "ct") {
    const tide::testing::PortRange ports = tide::testing::nextPortRange(20);
    options.state_dir = dir.file("container");
    options.volume_root = dir.file("volumes");
    options.port_range_start = ports.start;
    options.port_range_end = ports.end;
    options.cluster = cluster;
    options.config.pull = "never";  // no registry is reached from a test
    options.config.stop_grace = std::chrono::seconds(3);
    driver = another(cluster);
    sweep = std::make_unique<ContainerSweep>(options.state_dir);
  }

  // Another driver over the same state dir: a restarted host, or another cluster.
  std::unique_ptr<ContainerDriver> another(const std::string& cluster) const {
    ContainerDriverOptions copy = options;
    copy.cluster = cluster;
    auto created = ContainerDriver::create(copy);
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    return std::move(created).value();
  }

  // The state dir as its containers' tide.home label names it.
  std::string home() const { return std::filesystem::absolute(options.state_dir).lexically_normal().string(); }

  static RuntimeSpec spec(const std::string& id, const TestImage& image, std::vector<std::string> command) {
    RuntimeSpec spec;
    spec.id = id;
    spec.meta_instance = "web-" + id;
    spec.node = "node-a";
    spec.payload_name = "web";
    spec.plan = "shop";
    spec.deployment = "d1";
    spec.coordinates = {{"image", image.ref()}, {"command", command}};
    return spec;
  }

  // A container serving /www on 8080 with busybox httpd (-vv: log lines per request).
  static RuntimeSpec web(const std::string& id, const TestImage& image) {
    RuntimeSpec s = spec(
        id, image,
        {"/bin/sh", "-c", "echo started $TIDE_INSTANCE on $TIDE_PORT_TCP_8080; exec httpd -f -vv -p 8080 -h /www"});
    s.ports = {{"TCP", 8080}};
    return s;
  }

  model::WorkloadState stateOf(const std::string& id) const {
    auto status = driver->status({id, "node-a", ""});
    REQUIRE_MESSAGE(status.isOk(), status.status().toString());
    return status->state;
  }
};

std::string logOf(Driver& driver, const std::string& id) {
  auto log = readInstanceLog(driver, id, 64 << 10);
  return log.isOk() ? *log : "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("container log: k8s-file records read back as the workload's text, partial lines joined") {
  const std::string records =
      "2026-01-01T00:00:00.1+00:00 stdout F one\n"
      "2026-01-01T00:00:00.2+00:00 stdout P part\n"
      "2026-01-01T00:00:00.3+00:00 stdout F ial\n"
      "2026-01-01T00:00:00.4+00:00 stderr F err\n"
      "2026-01-01T00:00:00.5+00:00 stdout F unfinished";
  DecodedLog all = decodeK8sRecords(records);
  CHECK(all.text == "one\npartial\nerr\n");
  CHECK(all.consumed == records.rfind('\n') + 1);  // the record without its newline waits
  DecodedLog first = decodeK8sRecords(records, 5);
  CHECK(first.text == "one\n");  // "part" would take it beyond 5
  CHECK(decodeK8sRecords("2026-01-01T00:00:00.1+00:00 stdout F a long line\n", 3).text == "a long line\n");
}

TEST_CASE(
    "container driver: a started container serves its published port over loopback and its log reads on from a "
    "cursor") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  auto started = f.driver->ensure(f.web("1", image));
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(started->state == model::WorkloadState::kRunning);
  REQUIRE(started->ports.contains("tcp/8080"));
  const int port = started->ports["tcp/8080"].get<int>();
  CHECK(port >= f.options.port_range_start);
  CHECK(port <= f.options.port_range_end);

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  std::string body;
  CHECK(eventually([&] {
    auto reply = client.Get("/index.html");
    if (reply && reply->status == 200) body = reply->body;
    return !body.empty();
  }));
  CHECK(body == "hello from tide-test\n");

  // Idempotent: the same container, not a second one.
  auto again = f.driver->ensure(f.web("1", image));
  REQUIRE_MESSAGE(again.isOk(), again.status().toString());
  CHECK(again->handle == started->handle);
  CHECK(containersLabelled(f.home()) == std::vector<std::string>{f.driver->containerName("1")});

  CHECK(eventually([&] { return contains(logOf(*f.driver, "1"), "started web-1 on " + std::to_string(port)); }));
  auto first = f.driver->readLogSlice("1", std::nullopt, 64 << 10);
  REQUIRE(first.isOk());
  REQUIRE(first->end);
  REQUIRE(client.Get("/missing.html"));  // httpd -vv logs the request
  std::string after;
  CHECK(eventually([&] {
    auto next = f.driver->readLogSlice("1", first->end, 64 << 10);
    if (next.isOk()) after = next->text;
    return contains(after, "/missing.html");
  }));
  CHECK_FALSE(contains(after, "started web-1"));

  auto labels = podmanRun({"inspect", "--format", "{{json .Config.Labels}}", f.driver->containerName("1")});
  const Json labelled = Json::parse(labels.output);
  CHECK(labelled["tide.plan"] == "shop");
  CHECK(labelled["tide.deployment"] == "d1");
  CHECK(labelled["tide.instance"] == "1");
  CHECK(labelled["tide.meta"] == "web-1");
  CHECK(labelled["tide.cluster"] == "ct");

  REQUIRE(f.driver->remove({"1", "node-a", started->handle}).isOk());
  CHECK(containersLabelled(f.home()).empty());
  CHECK(f.driver->status({"1", "node-a", ""}).status().code() == Code::kNotFound);
  CHECK(f.driver->remove({"1", "node-a", started->handle}).isOk());  // idempotent
  CHECK(contains(logOf(*f.driver, "1"), "started web-1"));           // the log outlives the container
}

TEST_CASE("container driver: stop waits out the grace period only for a container that ignores SIGTERM") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  // A shell as pid 1 runs its trap; a bare sleep as pid 1 has no handler, so SIGTERM does nothing.
  auto slow = f.driver->ensure(
      f.spec("1", image, {"/bin/sh", "-c", "trap 'sleep 1; exit 3' TERM; echo ready; while true; do sleep 0.1; done"}));
  REQUIRE_MESSAGE(slow.isOk(), slow.status().toString());
  auto deaf = f.driver->ensure(f.spec("2", image, {"/bin/sleep", "1000"}));
  REQUIRE_MESSAGE(deaf.isOk(), deaf.status().toString());
  REQUIRE(eventually([&] { return contains(logOf(*f.driver, "1"), "ready"); }));

  using Clock = std::chrono::steady_clock;
  Clock::time_point begun = Clock::now();
  REQUIRE(f.driver->stop({"1", "node-a", ""}).isOk());
  const auto slow_took = Clock::now() - begun;
  begun = Clock::now();
  REQUIRE(f.driver->stop({"2", "node-a", ""}).isOk());
  const auto deaf_took = Clock::now() - begun;

  CHECK(slow_took >= std::chrono::milliseconds(900));  // its trap ran to its end
  auto slow_status = f.driver->status({"1", "node-a", ""});
  REQUIRE(slow_status.isOk());
  CHECK(slow_status->state == model::WorkloadState::kStopped);
  CHECK(slow_status->exit_code == 3);                   // its own exit, not a kill
  CHECK(deaf_took >= std::chrono::milliseconds(2900));  // the whole grace period
  auto deaf_status = f.driver->status({"2", "node-a", ""});
  REQUIRE(deaf_status.isOk());
  CHECK(deaf_status->state == model::WorkloadState::kStopped);
  CHECK(deaf_status->exit_code == 137);                    // SIGKILL
  CHECK(f.driver->stop({"2", "node-a", ""}).isOk());       // idempotent
  CHECK(f.driver->stop({"absent", "node-a", ""}).isOk());  // nothing to stop

  // Started again by ensure, with the ports it had.
  auto again = f.driver->ensure(f.spec("2", image, {"/bin/sleep", "1000"}));
  REQUIRE_MESSAGE(again.isOk(), again.status().toString());
  CHECK(again->state == model::WorkloadState::kRunning);
}

TEST_CASE("container driver: a container whose process dies is EXITED with its exit code") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  REQUIRE(f.driver->ensure(f.spec("1", image, {"/bin/sh", "-c", "echo bye; exit 7"})).isOk());
  CHECK(eventually([&] { return f.stateOf("1") == model::WorkloadState::kExited; }));
  auto exited = f.driver->status({"1", "node-a", ""});
  REQUIRE(exited.isOk());
  CHECK(exited->exit_code == 7);
  CHECK(contains(exited->message, "exited with code 7"));

  REQUIRE(f.driver->ensure(f.spec("2", image, {"/bin/sleep", "1000"})).isOk());
  auto pid = podmanRun({"inspect", "--format", "{{.State.Pid}}", f.driver->containerName("2")});
  REQUIRE(pid.succeeded());
  REQUIRE(::kill(std::stoi(pid.output), SIGKILL) == 0);
  CHECK(eventually([&] { return f.stateOf("2") == model::WorkloadState::kExited; }));
  CHECK(f.driver->status({"2", "node-a", ""})->exit_code == 137);
}

TEST_CASE("container driver: a driver started again over the same state dir adopts the running container") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  auto started = f.driver->ensure(f.web("1", image));
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());

  std::unique_ptr<ContainerDriver> restarted = f.another("ct");  // the host after a restart
  auto listed = restarted->list();
  REQUIRE(listed.isOk());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().id == "1");
  CHECK(listed->front().node == "node-a");
  CHECK(listed->front().handle == started->handle);
  auto adopted = restarted->ensure(f.web("1", image));
  REQUIRE_MESSAGE(adopted.isOk(), adopted.status().toString());
  CHECK(adopted->state == model::WorkloadState::kRunning);
  CHECK(adopted->handle == started->handle);
  CHECK(adopted->ports == started->ports);
  CHECK(containersLabelled(f.home()).size() == 1);
}

TEST_CASE(
    "container driver: list names its cluster's labelled containers, an unknown one among them, and remove ends it") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f("blue");
  std::unique_ptr<ContainerDriver> green = f.another("green");
  REQUIRE(f.driver->ensure(f.spec("1", image, {"/bin/sleep", "1000"})).isOk());
  REQUIRE(green->ensure(f.spec("2", image, {"/bin/sleep", "1000"})).isOk());
  // A container of the blue cluster that no driver call made (a host that died between
  // podman run and its ledger write, or a person): found by its labels all the same.
  auto stray = podmanRun({"run",       "--detach",
                          "--runtime", "runc",
                          "--ulimit",  "nofile=1024:1024",
                          "--ulimit",  "nproc=512:512",
                          "--name",    "tide-stray-" + std::to_string(::getpid()),
                          "--label",   "tide.home=" + f.home(),
                          "--label",   "tide.cluster=blue",
                          "--label",   "tide.instance=99",
                          "--label",   "tide.node=node-a",
                          image.ref(), "/bin/sleep",
                          "1000"});
  REQUIRE_MESSAGE(stray.succeeded(), stray.errors);

  auto blue = f.driver->list();
  REQUIRE(blue.isOk());
  REQUIRE(blue->size() == 2);
  CHECK((*blue)[0].id == "1");
  CHECK((*blue)[1].id == "99");
  auto greens = green->list();
  REQUIRE(greens.isOk());
  REQUIRE(greens->size() == 1);
  CHECK(greens->front().id == "2");

  // What the observer does with an orphan: remove the ref list() gave.
  REQUIRE(f.driver->remove((*blue)[1]).isOk());
  blue = f.driver->list();
  REQUIRE(blue.isOk());
  REQUIRE(blue->size() == 1);
  CHECK(blue->front().id == "1");
  CHECK(containersLabelled(f.home()).size() == 2);
}

TEST_CASE(
    "container driver: an image or a command that cannot run fails ensure with podman's message and leaves nothing") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  RuntimeSpec malformed = f.spec("1", image, {"/bin/true"});
  malformed.coordinates["image"] = "Not A Reference";
  auto refused = f.driver->ensure(malformed);
  CHECK(refused.status().code() == Code::kInvalidArgument);
  CHECK_MESSAGE(contains(refused.status().message(), "invalid reference format"), refused.status().message());

  RuntimeSpec missing = f.spec("2", image, {"/bin/true"});
  missing.coordinates["image"] = "localhost/tide-no-such-image:1";
  auto absent = f.driver->ensure(missing);
  CHECK(absent.status().code() == Code::kUnprocessable);
  CHECK_MESSAGE(contains(absent.status().message(), "localhost/tide-no-such-image:1"), absent.status().message());

  auto no_command = f.driver->ensure(f.spec("3", image, {"/no/such/program"}));
  CHECK(no_command.status().code() == Code::kUnprocessable);
  CHECK_MESSAGE(contains(no_command.status().message(), "/no/such/program"), no_command.status().message());

  RuntimeSpec bad_fields = f.spec("4", image, {});
  bad_fields.coordinates = {{"image", 7}, {"args", "x"}, {"colour", "red"}};
  auto unread = f.driver->ensure(bad_fields);
  REQUIRE(unread.status().code() == Code::kInvalidArgument);
  CHECK(unread.status().details().size() == 3);

  CHECK(containersLabelled(f.home()).empty());
}

TEST_CASE("container driver: statusAll answers every instance from one inspect, not_found for the unknown") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  std::vector<std::thread> starts;
  std::vector<Status> outcomes(3);
  for (int i = 0; i < 3; ++i) {
    starts.emplace_back([&, i] {
      outcomes[i] = f.driver->ensure(f.spec(std::to_string(i + 1), image, {"/bin/sleep", "1000"})).status();
    });
  }
  for (std::thread& start : starts) start.join();
  for (const Status& outcome : outcomes) CHECK_MESSAGE(outcome.isOk(), outcome.toString());
  REQUIRE(f.driver->stop({"2", "node-a", ""}).isOk());
  auto answers =
      f.driver->statusAll({{"1", "node-a", ""}, {"2", "node-a", ""}, {"3", "node-a", ""}, {"42", "node-a", ""}});
  REQUIRE(answers.isOk());
  REQUIRE(answers->size() == 4);
  CHECK((*answers)[0]->state == model::WorkloadState::kRunning);
  CHECK((*answers)[1]->state == model::WorkloadState::kStopped);
  CHECK((*answers)[2]->state == model::WorkloadState::kRunning);
  CHECK((*answers)[3].status().code() == Code::kNotFound);
  CHECK_FALSE((*answers)[0]->healthy.has_value());  // no HEALTHCHECK: the plan's check decides
}

TEST_CASE("container driver: volumes and allowed mounts are bound into the container, other mounts refused") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  const std::filesystem::path shared = f.dir.path() / "shared";
  std::filesystem::create_directories(shared);
  std::ofstream(shared / "motd") << "from the host\n";
  f.options.config.mount_sources = {shared.string()};
  f.driver = f.another("ct");

  RuntimeSpec spec =
      f.spec("1", image, {"/bin/sh", "-c", "cat /etc/motd-host; echo kept > $TIDE_VOLUME_DATA/file; sleep 1000"});
  spec.volumes = {{"web-1-0", "", "local", 1, "/data"}};
  spec.coordinates["mounts"] = {
      {{"source", (shared / "motd").string()}, {"target", "/etc/motd-host"}, {"read_only", true}}};
  auto started = f.driver->ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(eventually([&] { return contains(logOf(*f.driver, "1"), "from the host"); }));
  const std::filesystem::path volume = f.dir.path() / "volumes/node-a/local/web-1-0/file";
  CHECK(eventually([&] { return std::filesystem::exists(volume); }));

  RuntimeSpec outside = f.spec("2", image, {"/bin/true"});
  outside.coordinates["mounts"] = {{{"source", "/etc"}, {"target", "/host-etc"}}};
  auto refused = f.driver->ensure(outside);
  REQUIRE(refused.status().code() == Code::kInvalidArgument);
  CHECK(refused.status().details().front().field == "coordinates.mounts[0].source");
}

TEST_CASE("container driver: healthy is the image's HEALTHCHECK verdict once it has one, and empty before") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  // The test image with a HEALTHCHECK that passes once /tmp/ok exists (docker format: the
  // OCI format has no HEALTHCHECK). Its hour-long interval leaves every run to the test.
  const std::string checked = image.ref() + "-checked";
  std::ofstream(f.dir.path() / "Containerfile")
      << "FROM " << image.ref() << "\n"
      << "HEALTHCHECK --interval=1h --retries=1 CMD [\"/bin/sh\", \"-c\", \"test -e /tmp/ok\"]\n";
  auto built =
      podmanRun({"build", "--format", "docker", "--pull=never", "--quiet", "--tag", checked, f.dir.path().string()});
  REQUIRE_MESSAGE(built.succeeded(), built.errors);
  struct Untag {
    std::string ref;
    ~Untag() { (void)podmanRun({"rmi", "--force", ref}); }
  } untag{checked};

  RuntimeSpec spec = f.spec("1", image, {"/bin/sleep", "1000"});
  spec.coordinates["image"] = checked;
  REQUIRE(f.driver->ensure(spec).isOk());
  const std::string name = f.driver->containerName("1");
  auto healthOf = [&] {
    auto status = f.driver->status({"1", "node-a", ""});
    REQUIRE(status.isOk());
    CHECK(status->state == model::WorkloadState::kRunning);
    return status->healthy;
  };
  CHECK_FALSE(healthOf().has_value());  // starting: no verdict yet
  CHECK_FALSE(podmanRun({"healthcheck", "run", name}).succeeded());
  CHECK(healthOf() == std::optional<bool>(false));
  REQUIRE(podmanRun({"exec", name, "/bin/sh", "-c", ": > /tmp/ok"}).succeeded());
  CHECK(podmanRun({"healthcheck", "run", name}).succeeded());
  CHECK(healthOf() == std::optional<bool>(true));
}

TEST_CASE("container driver: two applications in one pod, the sidecar reaching the main one on localhost") {
  if (TIDE_PODMAN_MISSING()) return;
  TestImage image;
  ContainerDriverFixture f;
  ApplicationGroupDriver group(std::move(f.driver));
  RuntimeSpec spec = ContainerDriverFixture::web("21", image);
  ApplicationSpec web{"web", spec.coordinates, spec.ports, {}, std::nullopt, ""};
  ApplicationSpec sidecar{
      "sidecar",
      {{"image", image.ref()},
       {"command",
        {"/bin/sh", "-c", "until wget -q -O - http://127.0.0.1:8080/index.html; do sleep 0.2; done; exec sleep 600"}}},
      {},
      {},
      std::nullopt,
      "web"};
  spec.applications = {web, sidecar};
  auto started = group.ensure(spec);
  REQUIRE_MESSAGE(started.isOk(), started.status().toString());
  CHECK(started->state == model::WorkloadState::kRunning);
  REQUIRE(started->ports.contains("tcp/8080"));

  // The sidecar read web's page over the pod's localhost; the pod publishes web's port.
  CHECK(eventually(
      [&] { return contains(logOf(group, applicationRuntimeId("21", "sidecar")), "hello from tide-test"); }));
  httplib::Client client("127.0.0.1", started->ports["tcp/8080"].get<int>());
  client.set_connection_timeout(2);
  CHECK(eventually([&] {
    auto reply = client.Get("/index.html");
    return reply && reply->status == 200;
  }));
  // Asked again: the same containers in the same pod.
  auto again = group.ensure(spec);
  REQUIRE_MESSAGE(again.isOk(), again.status().toString());
  CHECK(again->handle == started->handle);

  // Removed whole, the pod with its last member.
  REQUIRE(group.remove({"21", "node-a", started->handle}).isOk());
  const std::string pods =
      podmanRun({"pod", "ps", "--filter", "label=tide.home=" + f.home(), "--format", "{{.Name}}"}).output;
  CHECK(pods.find("-pod") == std::string::npos);
  CHECK(containersLabelled(f.home()).empty());
}
