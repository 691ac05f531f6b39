#include <doctest/doctest.h>

#include "drivers/process/launch.h"

using namespace tide;
using namespace tide::drivers;
using Json = tide::model::Json;

namespace {

LaunchContext sampleContext() {
  LaunchContext context;
  context.tide_binary = "/opt/tide/bin/tide";
  context.instance = "web-abc";
  context.runtime_id = "42";
  context.node = "node-a";
  context.ports = {{"tcp/80", 31080}, {"udp/53", 31053}};
  context.volumes = {{"/data", "/var/tide/volumes/node-a/ssd/web-abc-0"}};
  return context;
}

}  // namespace

TEST_CASE("driver: glob patterns match whole image names") {
  CHECK(globMatch("nginx:*", "nginx:1.25"));
  CHECK(globMatch("nginx:*", "nginx:"));
  CHECK_FALSE(globMatch("nginx:*", "nginx"));
  CHECK_FALSE(globMatch("nginx:*", "my-nginx:1"));
  CHECK(globMatch("*/app:v?", "registry.local/app:v2"));
  CHECK_FALSE(globMatch("*/app:v?", "registry.local/app:v10"));
  CHECK(globMatch("*", ""));
  CHECK(globMatch("a*b*c", "aXXbYYbc"));
}

TEST_CASE("driver: the first matching catalog entry wins") {
  ImageCatalog catalog = {{"nginx:1.*", {"first"}}, {"nginx:*", {"second"}}};
  REQUIRE(matchImage(catalog, "nginx:1.25") != nullptr);
  CHECK(matchImage(catalog, "nginx:1.25")->front() == "first");
  CHECK(matchImage(catalog, "nginx:latest")->front() == "second");
  CHECK(matchImage(catalog, "redis:7") == nullptr);
}

TEST_CASE("driver: image tag is the text after the last colon, latest without one") {
  CHECK(imageTag("nginx:1.25") == "1.25");
  CHECK(imageTag("nginx") == "latest");
  CHECK(imageTag("registry:5000/app") == "latest");
  CHECK(imageTag("registry:5000/app:v3") == "v3");
}

TEST_CASE("driver: launch substitutes placeholders in argv and env values") {
  Json coordinates = {{"command",
                       {"{{tide}}", "workload", "--listen", "127.0.0.1:{{port.tcp.80}}", "--dns", "{{ port.UDP.53 }}",
                        "--data={{volume./data}}", "{{instance}}"}},
                      {"env", {{"GREETING", "hello from {{instance}}"}}}};
  auto launch = buildLaunch(coordinates, {}, sampleContext());
  REQUIRE_MESSAGE(launch.isOk(), launch.status().toString());
  CHECK(launch->argv == std::vector<std::string>{"/opt/tide/bin/tide", "workload", "--listen", "127.0.0.1:31080",
                                                 "--dns", "31053", "--data=/var/tide/volumes/node-a/ssd/web-abc-0",
                                                 "web-abc"});
  CHECK(launch->env.at("GREETING") == "hello from web-abc");
  CHECK(launch->env.at("TIDE_INSTANCE") == "web-abc");
  CHECK(launch->env.at("TIDE_RUNTIME_ID") == "42");
  CHECK(launch->env.at("TIDE_NODE") == "node-a");
  CHECK(launch->env.at("TIDE_PORT_TCP_80") == "31080");
  CHECK(launch->env.at("TIDE_PORT_UDP_53") == "31053");
  CHECK(launch->env.at("TIDE_VOLUME_DATA") == "/var/tide/volumes/node-a/ssd/web-abc-0");
}

TEST_CASE("driver: launch maps an image through the catalog") {
  ImageCatalog catalog = {
      {"tide-workload:*", {"{{tide}}", "workload", "--version", "{{image.tag}}", "--image", "{{image}}"}}};
  auto launch = buildLaunch({{"image", "tide-workload:v7"}}, catalog, sampleContext());
  REQUIRE(launch.isOk());
  CHECK(launch->argv ==
        std::vector<std::string>{"/opt/tide/bin/tide", "workload", "--version", "v7", "--image", "tide-workload:v7"});

  auto unknown = buildLaunch({{"image", "postgres:16"}}, catalog, sampleContext());
  CHECK(unknown.status().code() == Code::kUnprocessable);
  CHECK(unknown.status().message().find("postgres:16") != std::string::npos);
}

TEST_CASE("driver: launch rejects malformed coordinates naming the field") {
  auto fieldOf = [](const Json& coordinates) {
    auto launch = buildLaunch(coordinates, {}, sampleContext());
    REQUIRE(launch.status().code() == Code::kInvalidArgument);
    REQUIRE(launch.status().details().size() == 1);
    return launch.status().details().front().field;
  };
  CHECK(fieldOf({{"command", {"x", "{{nope}}"}}}) == "coordinates.command[1]");
  CHECK(fieldOf({{"command", {"x", "{{port.tcp.8080}}"}}}) == "coordinates.command[1]");
  CHECK(fieldOf({{"command", {"x", "{{volume./logs}}"}}}) == "coordinates.command[1]");
  CHECK(fieldOf({{"command", {"x", "{{image.tag}}"}}}) == "coordinates.command[1]");
  CHECK(fieldOf({{"command", {"x", "{{instance"}}}) == "coordinates.command[1]");
  CHECK(fieldOf({{"command", Json::array()}}) == "coordinates.command");
  CHECK(fieldOf({{"command", {"x", 3}}}) == "coordinates.command[1]");
  CHECK(fieldOf({{"command", {"x"}}, {"image", "nginx:1"}}) == "coordinates");
  CHECK(fieldOf(Json::object()) == "coordinates");
  CHECK(fieldOf({{"command", {"x"}}, {"env", {{"A", 1}}}}) == "coordinates.env.A");
  CHECK(fieldOf({{"command", {"x"}}, {"env", {{"B", "{{what}}"}}}}) == "coordinates.env.B");
}

TEST_CASE("driver: volume env names drop slashes and shout") {
  CHECK(volumeEnvName("/data") == "TIDE_VOLUME_DATA");
  CHECK(volumeEnvName("/var/lib/db/") == "TIDE_VOLUME_VAR_LIB_DB");
  CHECK(volumeEnvName("/srv/my-cache") == "TIDE_VOLUME_SRV_MY_CACHE");
  CHECK(portKey({"TCP", 80}) == "tcp/80");
}
