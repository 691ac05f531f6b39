// Policy decision benchmark: the five shipped policies (policies/*.lua) deciding a mix of
// operations in one PolicyEngine on one thread, as the approval stage does: one decision is
// every policy evaluated for one op, verdicts combined. The mix covers every rule: CREATE,
// UPDATE, DELETE, RESTART, RELOCATE and STOP in dev, prod and other namespaces, inside and
// outside business hours and both change freezes, with and without other operations in
// flight in the op's update domain.
//
// Then, when node and @cedar-policy/cedar-wasm are there, the same rules written in Cedar
// (tests/bench/cedar/policies.cedar) decide the same requests under Node
// (tests/bench/cedar/bench.js), which also checks that Cedar decides what tide decided.
// Prints one JSON line, with a digest of every decision (outcome, verdicts, reasons) that
// must not move when a change only makes deciding faster; notes go to stderr. Exits 1 when
// the mix misses a rule or the two disagree.
//
//   build-release/policy_bench [decisions per round] [distinct requests]
//
// Each side runs three rounds of `decisions` (default 100,000) after a warm-up and reports
// its best round: on a shared machine the other work only adds noise.
//   TIDE_CEDAR_DIR  where `npm install --prefix DIR @cedar-policy/cedar-wasm` put the package
//                   (default: <build dir>/cedar)

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/sha256.h"
#include "host/lua/policy/policy_engine.h"
#include "host/lua/registry/script_registry.h"

using namespace tide;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// splitmix64: the same mix on every machine and standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  // An index into `weights`, drawn in proportion to them.
  template <size_t N>
  size_t weighted(const int (&weights)[N]) {
    int total = 0;
    for (int w : weights) total += w;
    int roll = below(total);
    for (size_t i = 0; i < N; ++i) {
      if ((roll -= weights[i]) < 0) return i;
    }
    return N - 1;
  }

 private:
  uint64_t state_;
};

// A clock stopped at one instant: each request is decided at its own time.
class FixedClock final : public Clock {
 public:
  explicit FixedClock(TimePoint at) : at_(at) {}
  TimePoint now() const override { return at_; }
  bool waitUntil(TimePoint, const std::function<bool()>& done) const override { return done && done(); }
  void wake() const override {}

 private:
  TimePoint at_;
};

// ctx.in_flight from a table of (plan, update domain) counts, as an index in the ledger
// would answer it; the other ctx queries are not used by the shipped policies.
class BenchData final : public lua::PolicyDataSource {
 public:
  explicit BenchData(std::map<std::pair<std::string, std::string>, int64_t> in_flight)
      : in_flight_(std::move(in_flight)) {}
  Result<int64_t> inFlight(const Json& filter) override {
    auto it = in_flight_.find({filter.value("plan", ""), filter.value("update_domain", "")});
    return it == in_flight_.end() ? 0 : it->second;
  }
  Result<int64_t> count(const Json&) override { return 0; }
  Result<int64_t> recentFailures(const Json&) override { return 0; }
  Result<Json> instances(const std::string&) override { return Json::array(); }
  Result<Json> node(const std::string&) override { return Json(nullptr); }
  int64_t inFlight(const std::string& plan, const std::string& update_domain) const {
    auto it = in_flight_.find({plan, update_domain});
    return it == in_flight_.end() ? 0 : it->second;
  }

 private:
  std::map<std::pair<std::string, std::string>, int64_t> in_flight_;
};

struct Request {
  Json op;  // the snapshot the approval stage builds (ApprovalStage::opSnapshot)
  FixedClock clock;
  Json cedar;  // the same request as bench.js sends it to Cedar
};

constexpr const char* kTypes[] = {"CREATE", "UPDATE", "DELETE", "RESTART", "RELOCATE", "STOP"};
constexpr int kTypeWeights[] = {30, 25, 15, 15, 10, 5};
// dev, dev, dev, dev, dev, prod, prod, prod, prod, neither, neither, neither, neither
constexpr const char* kNamespaces[] = {"dev",  "dev-web",      "payments-test",  "test-api",      "web-dev",
                                       "prod", "prod-web",     "shop-prod",      "payments-prod", "staging",
                                       "shop", "devops-tools", "production-like"};
constexpr int kNamespaceWeights[] = {4, 10, 8, 6, 6, 6, 14, 10, 8, 10, 8, 5, 5};
constexpr const char* kPlans[] = {"web", "api", "db", "cache", "search"};
constexpr const char* kDomains[] = {"", "ud-1", "ud-2", "ud-3", "ud-4"};
constexpr int kDomainWeights[] = {10, 25, 25, 20, 20};
// Business hours, their edges, nights and weekends, both freezes and their edges.
constexpr const char* kTimes[] = {
    "2026-03-03T10:00:00Z",  // Tue, business hours
    "2026-03-04T16:59:00Z",  // Wed, a minute before closing
    "2026-03-05T09:00:00Z",  // Thu, opening
    "2026-03-03T17:00:00Z",  // Tue, closing: after hours
    "2026-03-02T08:59:00Z",  // Mon, a minute before opening
    "2026-03-07T11:00:00Z",  // Sat
    "2026-03-08T23:30:00Z",  // Sun night
    "2026-11-27T10:00:00Z",  // Fri, Black Friday freeze, business hours
    "2026-11-28T15:30:00Z",  // Sat, Black Friday freeze
    "2026-11-30T00:00:00Z",  // Mon, the Black Friday freeze just ended
    "2026-12-21T00:00:00Z",  // Mon, the first second of the year-end freeze
    "2026-12-22T11:00:00Z",  // Tue, year-end freeze, business hours
    "2027-01-04T00:00:00Z",  // Mon, the year-end freeze just ended
    "2027-01-05T14:00:00Z",  // Tue, business hours
};
constexpr int kTimeWeights[] = {25, 6, 6, 5, 4, 6, 5, 5, 3, 2, 2, 5, 2, 24};

Json coordinates(const std::string& plan, const std::string& version) {
  return Json::array(
      {{{"payload_name", plan}, {"coordinates", {{"image", "registry.local/" + plan + ":" + version}}}}});
}

std::vector<Request> makeRequests(int count, Random& random, const BenchData& data) {
  std::vector<Request> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const std::string type = kTypes[random.weighted(kTypeWeights)];
    const std::string ns = kNamespaces[random.weighted(kNamespaceWeights)];
    const std::string plan = kPlans[random.below(5)];
    const std::string domain = kDomains[random.weighted(kDomainWeights)];
    const std::string at = kTimes[random.weighted(kTimeWeights)];
    const std::string requested_by = random.below(5) == 0 ? "alice" : "controller";
    char suffix[8];
    std::snprintf(suffix, sizeof suffix, "%04x", random.below(0x10000));
    const std::string meta = plan + "-" + suffix;
    const std::string deployment = "d-2026-" + std::to_string(100 + random.below(900));
    const TimePoint now = *parseTimestamp(at);

    Json op{{"id", 1000 + i},
            {"type", type},
            {"intent", requested_by == "alice" ? "user" : deployment},
            {"requested_by", requested_by},
            {"meta_instance", meta},
            {"attempt", 1 + (random.below(10) == 0 ? 1 : 0)},
            {"plan", {{"name", plan}, {"namespace", ns}, {"service_name", plan}}},
            {"deployment",
             {{"id", requested_by == "alice" ? "" : deployment},
              {"old_coordinates", type == "CREATE" ? Json::array() : coordinates(plan, "1.26")},
              {"new_coordinates", type == "DELETE" || type == "STOP" ? Json::array() : coordinates(plan, "1.27")}}},
            {"node",
             {{"name", domain.empty() ? "" : "node-" + domain.substr(3) + std::string(1, char('a' + random.below(8)))},
              {"update_domain", domain},
              {"labels", domain.empty() ? Json::object() : Json{{"zone", domain}}}}}};

    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    Json cedar{{"type", type},
               {"plan", plan},
               {"namespace", ns},
               {"requested_by", requested_by},
               {"epoch", static_cast<int64_t>(seconds)},
               {"weekday", utc.tm_wday},
               {"hour", utc.tm_hour},
               {"update_domain", domain},
               {"in_flight_in_domain", data.inFlight(plan, domain)}};
    out.push_back({std::move(op), FixedClock(now), std::move(cedar)});
  }
  return out;
}

std::map<std::pair<std::string, std::string>, int64_t> inFlightTable(Random& random) {
  std::map<std::pair<std::string, std::string>, int64_t> table;
  for (const char* plan : kPlans) {
    for (const char* domain : kDomains) {
      const int roll = random.below(10);
      if (*domain && roll >= 7) table[{plan, domain}] = roll == 9 ? 2 : 1;
    }
  }
  return table;
}

// What decided: the outcome and the policies that voted for it (deny and manual voters for a
// REJECTED or PENDING_APPROVAL, approvers for an APPROVED), as Cedar's reasons name them.
Json decidedBy(const lua::Evaluation& e) {
  std::set<std::string> voters;
  for (const lua::PolicyDecision& d : e.decisions) {
    const std::string& v = d.record.verdict;
    const bool blocks = v == "deny" || v == "manual";
    if (e.outcome == lua::Outcome::kApproved ? v == "approve" : blocks) voters.insert(d.record.policy);
  }
  return Json{{"outcome", lua::outcomeName(e.outcome)},
              {"voters", Json(std::vector<std::string>(voters.begin(), voters.end()))}};
}

struct Figures {
  double per_s = 0;
  double per_cpu_s = 0;  // what one core does when other work shares the machine
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};

Figures measure(lua::PolicyEngine& engine, BenchData& data, const std::vector<Request>& requests, int decisions) {
  std::vector<double> latencies_us(static_cast<size_t>(decisions));
  const auto started = std::chrono::steady_clock::now();
  const std::clock_t cpu_started = std::clock();
  for (int i = 0; i < decisions; ++i) {
    const Request& r = requests[static_cast<size_t>(i) % requests.size()];
    const auto t0 = std::chrono::steady_clock::now();
    const lua::Evaluation e = engine.evaluate(r.op, data, r.clock);
    const auto t1 = std::chrono::steady_clock::now();
    latencies_us[static_cast<size_t>(i)] = std::chrono::duration<double, std::micro>(t1 - t0).count();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double cpu_seconds = static_cast<double>(std::clock() - cpu_started) / CLOCKS_PER_SEC;
  std::sort(latencies_us.begin(), latencies_us.end());
  auto at = [&](double q) { return latencies_us[static_cast<size_t>(q * (latencies_us.size() - 1))]; };
  return {decisions / seconds, decisions / cpu_seconds, at(0.50), at(0.90), at(0.99), at(0.999), latencies_us.back()};
}

// The best of `rounds` measurements: on a shared machine the others only add noise.
Figures bestOf(int rounds, lua::PolicyEngine& engine, BenchData& data, const std::vector<Request>& requests,
               int decisions) {
  Figures best;
  for (int round = 0; round < rounds; ++round) {
    const Figures f = measure(engine, data, requests, decisions);
    std::fprintf(stderr, "policy_bench: tide round %d: %.0f/s, p50 %.2f us, p99 %.2f us\n", round + 1, f.per_s,
                 f.p50_us, f.p99_us);
    if (f.per_s > best.per_s) best = f;
  }
  return best;
}

std::optional<fs::path> findOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::string quoted(const fs::path& path) {
  std::string out = "'";
  for (char c : path.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs bench.js over `requests_file`; its JSON report, or null with the reason on stderr.
Json runCedar(const fs::path& requests_file) {
  auto node = findOnPath("node");
  if (!node) {
    std::fprintf(stderr, "cedar side skipped: node not found\n");
    return nullptr;
  }
  const char* dir_env = std::getenv("TIDE_CEDAR_DIR");
  const fs::path dir = dir_env && *dir_env ? fs::path(dir_env) : fs::path(TIDE_BUILD_DIR) / "cedar";
  const fs::path module = dir / "node_modules" / "@cedar-policy" / "cedar-wasm" / "nodejs" / "cedar_wasm.js";
  if (!fs::exists(module)) {
    std::fprintf(stderr,
                 "cedar side skipped: @cedar-policy/cedar-wasm not found in %s (npm install --prefix %s "
                 "@cedar-policy/cedar-wasm)\n",
                 dir.c_str(), dir.c_str());
    return nullptr;
  }
  const fs::path source = fs::path(TIDE_SOURCE_DIR) / "tests" / "bench" / "cedar";
  const std::string command = quoted(*node) + " " + quoted(source / "bench.js") + " " + quoted(module) + " " +
                              quoted(source / "policies.cedar") + " " + quoted(requests_file);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    std::fprintf(stderr, "cedar side skipped: cannot run node\n");
    return nullptr;
  }
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  Json report = Json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (status != 0 || report.is_discarded() || !report.is_object()) {
    std::fprintf(stderr, "cedar side failed (exit status %d): %s\n", status, output.c_str());
    return nullptr;
  }
  return report;
}

// `value` to `digits` decimals, so the JSON line reads 12.34, not 12.340000000000002.
double rounded(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

}  // namespace

int main(int argc, char** argv) {
  const int decisions = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int distinct = argc > 2 ? std::atoi(argv[2]) : 2048;
  const int warmup = std::min(decisions, 20000);
  constexpr int kRounds = 3;

  const SystemClock system_clock;
  lua::ScriptRegistryOptions registry_options;
  registry_options.policies_dir = fs::path(TIDE_SOURCE_DIR) / "policies";
  registry_options.scripts_dir = fs::path(TIDE_SOURCE_DIR) / "scripts";
  lua::DiscardingScriptRecorder recorder;
  lua::ScriptRegistry registry(registry_options, recorder, system_clock);
  const lua::ReloadSummary summary = registry.reloadAll();
  const size_t policy_count = registry.current()->ofKind(lua::ScriptKind::kPolicy).size();
  if (summary.failed != 0 || policy_count != 5) {
    std::fprintf(stderr, "policy_bench: expected the 5 shipped policies to load, got %zu (%zu failed)\n", policy_count,
                 static_cast<size_t>(summary.failed));
    for (const std::string& error : summary.errors) std::fprintf(stderr, "  %s\n", error.c_str());
    return 1;
  }

  Random random(7);
  BenchData data(inFlightTable(random));
  const std::vector<Request> requests = makeRequests(distinct, random, data);
  lua::PolicyEngine engine(registry, system_clock);

  // Every rule must be exercised, and each request's answer is what Cedar must match.
  std::map<std::string, int> votes;  // "policy verdict" -> count; "outcome X" -> count
  Json expected = Json::array();
  std::string decided;  // every request's outcome, verdicts and reasons, for the digest
  for (const Request& r : requests) {
    const lua::Evaluation e = engine.evaluate(r.op, data, r.clock);
    decided += std::string(lua::outcomeName(e.outcome)) + "\n";
    for (const lua::PolicyDecision& d : e.decisions) {
      if (!d.record.error_class.empty()) {
        std::fprintf(stderr, "policy_bench: %s failed: %s\n", d.record.policy.c_str(), d.record.reasons.dump().c_str());
        return 1;
      }
      ++votes[d.record.policy + " " + d.record.verdict];
      decided += d.record.policy + " " + d.record.verdict + " " + d.record.reasons.dump() + "\n";
    }
    ++votes[std::string("outcome ") + lua::outcomeName(e.outcome)];
    Json request = r.cedar;
    request["expected"] = decidedBy(e);
    expected.push_back(std::move(request));
  }
  std::string coverage;
  bool covered = true;
  for (const char* rule :
       {"auto-approve-dev approve", "auto-approve-dev abstain", "business-hours manual", "business-hours abstain",
        "change-freeze deny", "change-freeze abstain", "prod-delete-manual manual", "prod-delete-manual abstain",
        "update-domain-budget manual", "update-domain-budget abstain", "outcome APPROVED", "outcome REJECTED",
        "outcome PENDING_APPROVAL"}) {
    coverage += std::string(coverage.empty() ? "" : ", ") + rule + " " + std::to_string(votes[rule]);
    covered = covered && votes[rule] > 0;
  }
  // The same digest before and after a change to the policies or the engine: they decide
  // every request alike, reasons included (Cedar only checks outcomes and voters).
  const std::string decisions_sha256 = sha256Hex(decided);
  std::fprintf(stderr, "policy_bench: %d distinct requests: %s; decisions sha256 %s\n", distinct, coverage.c_str(),
               decisions_sha256.c_str());
  if (!covered) {
    std::fprintf(stderr, "policy_bench: the request mix misses a rule\n");
    return 1;
  }

  (void)measure(engine, data, requests, warmup);
  const Figures tide = bestOf(kRounds, engine, data, requests, decisions);
  std::fprintf(stderr,
               "policy_bench: tide, best of %d rounds of %d decisions: %.0f/s wall, %.0f/s CPU; per decision p50 "
               "%.2f, p90 %.2f, p99 %.2f, p99.9 %.2f, max %.0f us (Lua state %zu KiB)\n",
               kRounds, decisions, tide.per_s, tide.per_cpu_s, tide.p50_us, tide.p90_us, tide.p99_us, tide.p999_us,
               tide.max_us, engine.luaMemoryUsed() / 1024);

  Json cedar = nullptr;
  char dir_template[] = "/tmp/tide-policy-bench-XXXXXX";
  if (const char* dir = ::mkdtemp(dir_template)) {
    const fs::path requests_file = fs::path(dir) / "requests.json";
    std::ofstream(requests_file)
        << Json{{"decisions", decisions}, {"rounds", kRounds}, {"warmup", warmup}, {"requests", expected}}.dump();
    cedar = runCedar(requests_file);
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  } else {
    std::fprintf(stderr, "cedar side skipped: cannot make a temporary directory\n");
  }

  bool agreed = true;
  nlohmann::ordered_json line{{"bench", "policy_decisions"},       {"decisions_per_s", rounded(tide.per_s, 1)},
                              {"p50_us", rounded(tide.p50_us, 2)}, {"p99_us", rounded(tide.p99_us, 2)},
                              {"cedar_decisions_per_s", nullptr},  {"ratio_vs_cedar", nullptr}};
  line["decisions_per_cpu_s"] = rounded(tide.per_cpu_s, 1);
  line["decisions_sha256"] = decisions_sha256;
  if (cedar.is_object()) {
    const double cedar_per_s = cedar.value("decisions_per_s", 0.0);
    line["cedar_decisions_per_s"] = rounded(cedar_per_s, 1);
    line["ratio_vs_cedar"] = cedar_per_s > 0 ? Json(rounded(tide.per_s / cedar_per_s, 2)) : Json(nullptr);
    line["cedar_p50_us"] = cedar["p50_us"];
    line["cedar_p99_us"] = cedar["p99_us"];
    line["cedar_entry_point"] = cedar["entry_point"];
    line["cedar_agreement"] = std::to_string(cedar.value("agree", 0)) + "/" + std::to_string(cedar.value("checked", 0));
    agreed = cedar.value("agree", -1) == cedar.value("checked", -2);
    std::fprintf(stderr, "policy_bench: cedar: %s\n", cedar.dump().c_str());
  }
  std::printf("%s\n", line.dump().c_str());
  if (!agreed) {
    std::fprintf(stderr, "policy_bench: Cedar and tide disagree on some requests\n");
    return 1;
  }
  return 0;
}
