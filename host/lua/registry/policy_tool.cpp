#include "host/lua/registry/policy_tool.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_engine.h"
#include "host/lua/runtime/script_loader.h"
#include "host/lua/registry/script_registry.h"
#include "host/lua/registry/script_tests.h"

namespace tide::lua {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> luaFilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".lua" && entry.is_regular_file(ec))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

ScriptSet loadLibs(const fs::path& scripts_dir, std::ostream& out) {
  ScriptSet libs;
  for (const fs::path& file : luaFilesIn(scripts_dir / "lib")) {
    auto lib = readScriptFile(file, file.lexically_normal().string(), ScriptKind::kLib);
    if (lib.isOk()) {
      libs.files[lib->path] = std::move(lib).value();
    } else {
      out << "warning: " << lib.status().message() << "\n";
    }
  }
  return libs;
}

// Files in a directory named "rollout" are strategies; everything else is a policy.
ScriptKind testedKindOf(const fs::path& file) {
  return file.parent_path().filename() == "rollout" ? ScriptKind::kStrategy : ScriptKind::kPolicy;
}

// Prints PASS/FAIL per case, counting them; the error when the file did not load.
Status printCases(const Result<std::vector<CaseResult>>& results, std::ostream& out, int& passed,
                  int& failed) {
  if (!results.isOk()) return results.status();
  if (results->empty()) out << "  (no tests)\n";
  for (const CaseResult& r : *results) {
    if (r.passed) {
      out << "  PASS  " << r.name << "\n";
      ++passed;
    } else {
      out << "  FAIL  " << r.name << ": expected " << r.expected << ", got " << r.actual << "\n";
      ++failed;
    }
  }
  return Status::ok();
}

std::string padded(std::string text, size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

}  // namespace

int runPolicyTests(const std::vector<std::string>& files_or_dirs, std::ostream& out,
                   const PolicyToolOptions& options) {
  std::vector<fs::path> files;
  std::vector<std::string> targets = files_or_dirs;
  if (targets.empty()) {
    targets.push_back(options.policies_dir.string());
    std::error_code ec;
    const fs::path strategies = options.scripts_dir / "rollout";
    if (fs::is_directory(strategies, ec)) targets.push_back(strategies.string());
  }
  for (const std::string& target : targets) {
    std::error_code ec;
    if (fs::is_directory(target, ec)) {
      for (const fs::path& file : luaFilesIn(target)) files.push_back(file);
    } else {
      files.emplace_back(target);
    }
  }
  if (files.empty()) {
    out << "no policy files found in " << targets.front() << "\n";
    return 2;
  }

  const ScriptSet libs = loadLibs(options.scripts_dir, out);
  int passed = 0;
  int failed = 0;
  for (const fs::path& path : files) {
    const ScriptKind kind = testedKindOf(path);
    auto file = readScriptFile(path, path.lexically_normal().string(), kind);
    if (!file.isOk()) {
      out << path.string() << "\n  FAIL  " << file.status().message() << "\n";
      ++failed;
      continue;
    }
    out << file->path << "\n";
    const Status loaded =
        printCases(runScriptTests(*file, libs, options.limits), out, passed, failed);
    if (!loaded.isOk()) {
      out << "  FAIL  does not load: " << loaded.message() << "\n";
      ++failed;
    }
  }
  out << passed << " passed, " << failed << " failed\n";
  return failed > 0 ? 1 : 0;
}

int evalOpFile(const std::string& op_file, std::ostream& out, const PolicyToolOptions& options) {
  std::ifstream in(op_file);
  if (!in) {
    out << "cannot read " << op_file << "\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  Json document = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    out << op_file << ": not a JSON object\n";
    return 2;
  }
  Json op = document;
  Json fixture = Json::object();
  if (document.contains("op") && document["op"].is_object()) {
    op = document["op"];
    if (document.contains("ctx")) fixture = document["ctx"];
  }
  const SystemClock system_clock;
  auto now = fixtureNow(fixture, system_clock.now());
  if (!now.isOk()) {
    out << op_file << ": " << now.status().message() << "\n";
    return 2;
  }
  FakeClock clock(*now);

  ScriptRegistryOptions registry_options;
  registry_options.policies_dir = options.policies_dir;
  registry_options.scripts_dir = options.scripts_dir;
  registry_options.limits = options.limits;
  DiscardingScriptRecorder recorder;
  ScriptRegistry registry(registry_options, recorder, clock);
  const ReloadSummary summary = registry.reloadAll();
  for (const std::string& error : summary.errors) out << "warning: not loaded: " << error << "\n";

  PolicyEngineOptions engine_options;
  engine_options.limits = options.limits;
  engine_options.default_outcome = options.default_outcome;
  PolicyEngine engine(registry, clock, engine_options);
  SnapshotDataSource data(fixture, clock);
  const Evaluation evaluation = engine.evaluate(op, data);

  if (options.json) {
    out << Json(evaluation).dump(2) << "\n";
    return 0;
  }
  out << "verdict: " << outcomeName(evaluation.outcome) << "\n";
  out << "reason:  " << evaluation.summary << "\n";
  if (evaluation.overridable) out << "         (soft denies only: an approver may override)\n";
  out << "\n"
      << padded("POLICY", 24) << padded("LEVEL", 10) << padded("VERDICT", 9) << padded("TIME", 10)
      << "REASON\n";
  for (const PolicyDecision& d : evaluation.decisions) {
    std::string reason = d.record.reasons.empty() ? "" : d.record.reasons[0].get<std::string>();
    std::string line = padded(d.record.policy, 24) + padded(d.level, 10) +
                       padded(d.record.verdict, 9) +
                       padded(std::to_string(d.record.duration_us) + "us", 10) + reason;
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  }
  if (evaluation.decisions.empty()) out << "(no policy applies)\n";
  for (const LogRecord& log : evaluation.logs) {
    out << "log " << log.level << " " << log.where << ": " << log.message;
    if (!log.fields.is_null()) out << " " << log.fields.dump();
    out << "\n";
  }
  return 0;
}

}  // namespace tide::lua
