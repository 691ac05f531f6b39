// GET /v1/instances/{name}/logs?offset=N&file=F and `tide logs -f` against `tide serve`, with
// a workload that writes numbered lines and a log rotated at 4 KiB (docs/api.md#following-a-log).

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "host/cli/client.h"
#include "tests/cli/cli_process.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/serve_process.h"
#include "tests/support/eventually.h"

using namespace tide::testing;

namespace {

using Json = nlohmann::json;

constexpr const char* kLogPlan = "log-writer-plan";

// A dev plan (approved by policies/auto_approve_dev.lua) of one instance whose workload writes
// "line 1", "line 2", ... about a hundred a second; its meta instance's name.
std::string startLineWriter(const ServeProcess& serve) {
  const std::filesystem::path plan = serve.dataDir() / "log-writer-plan.yaml";
  std::ofstream(plan) << "name: " << kLogPlan << "\nnamespace: nginx-dev\nserviceName: log-writer\n"
                      << "matchingComputeCapabilities:\n"
                         "  - {capabilityType: CPU, comparator: eq, capabilityNames: [intel-xeon]}\n"
                         "applications:\n"
                         "  - payloadName: writer\n"
                         "    resources: {cores: 1, memory: 1}\n"
                         "    healthCheck: {type: exec, command: [/bin/true]}\n";
  const std::filesystem::path deployment = serve.dataDir() / "log-writer-deployment.yaml";
  std::ofstream(deployment) << "deployment_plan_name: " << kLogPlan
                            << "\ndeployment_id: writer-1\n"
                               "payload_coordinates:\n"
                               "  - payload_name: writer\n"
                               "    coordinates:\n"
                               "      command: [/bin/sh, -c, 'i=0; while :; do i=$((i+1)); echo \"line $i\"; "
                               "sleep 0.01; done']\n"
                               "instance_count: 1\n";
  REQUIRE(serve.tide("node create -m " + example("nodes.yaml")).code == 0);
  CliRun created = serve.tide("deployment create -m " + plan.string());
  REQUIRE_MESSAGE(created.code == 0, created.err);
  CliRun added = serve.tide("deployment add-deployment -m " + deployment.string());
  REQUIRE_MESSAGE(added.code == 0, added.err);
  CliRun watched = serve.tide(std::string("deployment watch ") + kLogPlan, std::chrono::seconds(120));
  REQUIRE_MESSAGE(watched.code == 0, watched.err);
  CliRun listed = serve.tide(std::string("instances list -o json --plan ") + kLogPlan);
  REQUIRE(listed.code == 0);
  return Json::parse(listed.out)["items"].at(0)["meta_instance"]["name"].get<std::string>();
}

// The numbers of the whole "line N" lines of `text`, in order; a piece cut at either end is skipped.
std::vector<long> lineNumbers(const std::string& text) {
  std::vector<long> numbers;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (lines.eof()) break;  // no newline after it: cut
    if (line.starts_with("line ")) numbers.push_back(std::stol(line.substr(5)));
  }
  return numbers;
}

// Whether `numbers` go up by one from the first to the last.
bool consecutive(const std::vector<long>& numbers) {
  for (size_t i = 1; i < numbers.size(); ++i) {
    if (numbers[i] != numbers[i - 1] + 1) return false;
  }
  return true;
}

tide::cli::Client clientOf(const ServeProcess& serve) {
  tide::cli::Endpoint endpoint;
  endpoint.server = serve.url();
  endpoint.token = serve.token();
  return tide::cli::Client(endpoint);
}

}  // namespace

TEST_CASE("api: a log read from an offset holds only the new bytes, and goes on across a rotation") {
  ServeProcess serve("", {}, "log_max_bytes: 4096");
  const std::string instance = startLineWriter(serve);
  tide::cli::Client client = clientOf(serve);
  const std::string path = "/v1/instances/" + instance + "/logs";

  auto first = client.getTextReply(path);
  REQUIRE_MESSAGE(first.isOk(), first.status().toString());
  std::string file = first->header("Tide-Log-File");
  REQUIRE(!file.empty());
  int64_t offset = std::stoll(first->header("Tide-Log-Offset"));
  CHECK(first->header("Tide-Log-Continues").empty());

  // Each poll from where the last ended: its body is exactly the bytes between the two
  // offsets (or, across a rotation, the old file's rest and the new one's start), and the
  // lines put together run on without a gap or a repeat, until the log was rotated twice.
  std::string followed = first->body;
  int rotations = 0;
  size_t polls = 0;
  REQUIRE(eventually(
      [&] {
        auto next = client.getTextReply(path, {{"offset", std::to_string(offset)}, {"file", file}});
        REQUIRE_MESSAGE(next.isOk(), next.status().toString());
        CHECK(next->header("Tide-Log-Continues") == "true");
        const int64_t end = std::stoll(next->header("Tide-Log-Offset"));
        if (next->header("Tide-Log-File") == file) {
          CHECK(static_cast<int64_t>(next->body.size()) == end - offset);
        } else {
          ++rotations;
          CHECK(static_cast<int64_t>(next->body.size()) >= end);
          file = next->header("Tide-Log-File");
        }
        offset = end;
        followed += next->body;
        ++polls;
        return rotations >= 2;
      },
      std::chrono::seconds(120)));
  const std::vector<long> numbers = lineNumbers(followed);
  CHECK(numbers.size() > 2);
  CHECK_MESSAGE(consecutive(numbers), "after " << polls << " polls: " << followed);

  // From an offset beyond the file's end (of a file the log has, or one it never had): the
  // current file from its start, and the reply says it does not go on from the offset.
  for (const std::string& asked_file : {file, std::string("404.1")}) {
    auto beyond = client.getTextReply(path, {{"offset", std::to_string(offset + (1 << 20))}, {"file", asked_file}});
    REQUIRE(beyond.isOk());
    CHECK(beyond->header("Tide-Log-Continues") == "false");
    CHECK(std::stoll(beyond->header("Tide-Log-Offset")) == static_cast<int64_t>(beyond->body.size()));
    // What offset 0 of that file holds, now that the workload has written on.
    auto start = client.getTextReply(path, {{"offset", "0"}, {"file", beyond->header("Tide-Log-File")}});
    REQUIRE(start.isOk());
    CHECK(start->header("Tide-Log-Continues") == "true");
    CHECK(start->body.starts_with(beyond->body));
  }

  // Offsets that are no place in a log: 400 naming `offset`.
  for (const char* bad : {"-1", "ten", "1e6", "9007199254740992", "123456789012345678901234"}) {
    auto refused = client.getTextReply(path, {{"offset", bad}});
    CHECK_MESSAGE(refused.status().code() == tide::Code::kInvalidArgument, bad);
    CHECK_MESSAGE(contains(refused.status().message(), "'offset'"), refused.status().message());
  }
}

TEST_CASE("cli: logs -f follows a log across its rotations without a gap, a repeat or a restart line") {
  ServeProcess serve("", {}, "log_max_bytes: 4096");
  const std::string instance = startLineWriter(serve);
  RunningTide follow({"logs", "-f", instance, "--server", serve.url(), "--token", serve.token()});
  // Three log files' worth of lines: the log was rotated at least twice meanwhile.
  const long start = [&] {
    REQUIRE(follow.waitFor([](const std::string& out) { return !lineNumbers(out).empty(); }));
    return lineNumbers(follow.output()).front();
  }();
  CHECK_MESSAGE(follow.waitFor([&](const std::string& out) {
    const std::vector<long> numbers = lineNumbers(out);
    return !numbers.empty() && numbers.back() > start + 3 * 4096 / 10;
  },
                                std::chrono::seconds(120)),
                follow.output());
  CHECK_MESSAGE(consecutive(lineNumbers(follow.output())), follow.output());
  CHECK(follow.output().find("==>") == std::string::npos);
}
