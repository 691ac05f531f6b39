// The alert rules shipped for Prometheus (deploy/prometheus/tide-rules.yml, docs/api.md#alerting)
// against a real host: every tide_ metric their expressions read is on the /metrics of a
// `tide serve` started here, so renaming a metric without its rules fails this test. (promtool
// checks the rules' syntax and runs their own tests: ctest prometheus_rules_check and
// prometheus_rules_test.)

#include <doctest/doctest.h>
#include <httplib.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "host/config/yaml_tree.h"
#include "tests/cli/serve_process.h"

namespace tide {
namespace {

const config::YamlNode* ruleField(const config::YamlNode& mapping, const std::string& key) {
  for (const auto& [k, v] : mapping.entries) {
    if (k.scalar == key) return &v;
  }
  return nullptr;
}

// The tide_ metric names the rules' expressions read.
std::set<std::string> metricsNamedByRules(const std::filesystem::path& file) {
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  auto documents = config::parseYamlDocuments(text.str(), file.string());
  REQUIRE_MESSAGE(documents.isOk(), documents.status().toString());
  REQUIRE(documents->size() == 1);
  const config::YamlNode* groups = ruleField(documents->front(), "groups");
  REQUIRE(groups != nullptr);
  const std::regex name("tide_[a-zA-Z0-9_]+");
  std::set<std::string> out;
  for (const config::YamlNode& group : groups->items) {
    const config::YamlNode* rules = ruleField(group, "rules");
    REQUIRE(rules != nullptr);
    for (const config::YamlNode& rule : rules->items) {
      const config::YamlNode* expr = ruleField(rule, "expr");
      REQUIRE(expr != nullptr);
      for (std::sregex_iterator it(expr->scalar.begin(), expr->scalar.end(), name), end; it != end; ++it) {
        out.insert(it->str());
      }
    }
  }
  return out;
}

// Whether `scrape` (a /metrics body) exports `name`: a sample of it, or its TYPE line (a series
// labelled by plan shows samples only once a plan has it), or, for name_count, _sum and
// _bucket, the TYPE line of the histogram they belong to.
bool exportedBy(const std::string& scrape, const std::string& name) {
  const std::string lines = "\n" + scrape;
  if (lines.find("\n" + name + "{") != std::string::npos || lines.find("\n" + name + " ") != std::string::npos) {
    return true;
  }
  if (lines.find("\n# TYPE " + name + " ") != std::string::npos) return true;
  for (const std::string suffix : {"_count", "_sum", "_bucket"}) {
    if (name.ends_with(suffix)) {
      const std::string histogram = name.substr(0, name.size() - suffix.size());
      if (lines.find("\n# TYPE " + histogram + " histogram\n") != std::string::npos) return true;
    }
  }
  return false;
}

TEST_CASE("prometheus rules: every metric the shipped alert rules read is on a real host's /metrics") {
  const std::set<std::string> named =
      metricsNamedByRules(std::filesystem::path(TIDE_SOURCE_DIR) / "deploy" / "prometheus" / "tide-rules.yml");
  // The rules read what issue 32 asked them to watch.
  for (const char* wanted :
       {"tide_rollouts", "tide_rollout_held_seconds", "tide_operations_waiting_approval_oldest_seconds",
        "tide_plan_desired_instances", "tide_plan_running_instances", "tide_script_status", "tide_hook_failures_total",
        "tide_router_errors_total", "tide_driver_call_errors_total", "tide_control_loop_halted"}) {
    CHECK_MESSAGE(named.count(wanted) == 1, wanted);
  }

  testing::ServeProcess serve;
  httplib::Client client(serve.url());
  std::string scrape;
  // The control loop's series appear with its first pass; poll for them with a deadline.
  const bool passed = testing::eventually([&] {
    auto reply = client.Get("/metrics");
    if (!reply || reply->status != 200) return false;
    scrape = reply->body;
    return scrape.find("\ntide_reconcile_pass_duration_seconds_count 0\n") == std::string::npos &&
           scrape.find("\ntide_reconcile_pass_duration_seconds_count ") != std::string::npos;
  });
  REQUIRE_MESSAGE(passed, scrape);
  for (const std::string& name : named) CHECK_MESSAGE(exportedBy(scrape, name), name << " is not on /metrics");
  CHECK_FALSE(exportedBy(scrape, "tide_no_such_metric"));
  // The shipped scripts are loaded and shown, each with its status.
  CHECK(std::regex_search(
      scrape, std::regex("\ntide_script_status\\{script=\"[^\"]*rolling\\.lua\",status=\"active\"\\} 1\n")));
}

}  // namespace
}  // namespace tide
