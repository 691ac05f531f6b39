#include "host/lua/registry/policy_tool.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_engine.h"
#include "host/lua/registry/script_registry.h"
#include "host/lua/registry/script_tests.h"
#include "host/lua/runtime/script_loader.h"

namespace tide::lua {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> luaFilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".lua" && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The libs of <scripts_dir>/lib; a lib that cannot be read is a warning.
ScriptSet loadLibs(const fs::path& scripts_dir, std::vector<std::string>& warnings) {
  ScriptSet libs;
  for (const fs::path& file : luaFilesIn(scripts_dir / "lib")) {
    auto lib = readScriptFile(file, file.lexically_normal().string(), ScriptKind::kLib);
    if (lib.isOk()) {
      libs.files[lib->path] = std::move(lib).value();
    } else {
      warnings.push_back(lib.status().message());
    }
  }
  return libs;
}

// By the directory a file is in, as the registry's directories name them (script_registry.h);
// a file anywhere else is a policy.
ScriptKind kindByDirectory(const fs::path& file) {
  const fs::path dir = file.parent_path().filename();
  if (dir == "rollout") return ScriptKind::kStrategy;
  if (dir == "hooks") return ScriptKind::kHook;
  if (dir == "lib") return ScriptKind::kLib;
  return ScriptKind::kPolicy;
}

// The files `paths` name (a directory: its *.lua files), or those of the default
// directories when there are none. `searched` is where the first one is.
std::vector<fs::path> filesToTest(const std::vector<std::string>& paths, const PolicyToolOptions& options,
                                  std::string& searched) {
  std::vector<std::string> targets = paths;
  if (targets.empty()) {
    targets.push_back(options.policies_dir.string());
    std::error_code ec;
    const fs::path strategies = options.scripts_dir / "rollout";
    if (fs::is_directory(strategies, ec)) targets.push_back(strategies.string());
  }
  searched = targets.front();
  std::vector<fs::path> files;
  for (const std::string& target : targets) {
    std::error_code ec;
    if (fs::is_directory(target, ec)) {
      for (const fs::path& file : luaFilesIn(target)) files.push_back(file);
    } else {
      files.emplace_back(target);
    }
  }
  return files;
}

struct FileTests {
  std::string path;
  ScriptKind kind = ScriptKind::kPolicy;
  std::string error;  // set: the file was not tested ("does not load: ...", "not tested: ...")
  std::vector<CaseResult> cases;
};

FileTests testFile(const fs::path& path, const ScriptSet& libs, const LuaLimits& limits) {
  FileTests tested;
  tested.path = path.lexically_normal().string();
  tested.kind = kindByDirectory(path);
  auto file = readScriptFile(path, tested.path, tested.kind);
  auto results = file.isOk() ? runScriptTests(*file, libs, limits) : Result<std::vector<CaseResult>>(file.status());
  if (results.isOk()) {
    tested.cases = std::move(results).value();
  } else {
    tested.error = (hasTests(tested.kind) ? "does not load: " : "not tested: ") + results.status().message();
  }
  return tested;
}

void printText(const std::vector<FileTests>& files, std::ostream& out) {
  for (const FileTests& file : files) {
    out << file.path << "\n";
    if (!file.error.empty()) out << "  FAIL  " << file.error << "\n";
    if (file.error.empty() && file.cases.empty()) out << "  (no tests)\n";
    for (const CaseResult& r : file.cases) {
      if (r.passed) {
        out << "  PASS  " << r.name << "\n";
      } else {
        out << "  FAIL  " << r.name << ": expected " << r.expected << ", got " << r.actual << "\n";
      }
    }
  }
}

Json filesJson(const std::vector<FileTests>& files) {
  Json items = Json::array();
  for (const FileTests& file : files) {
    Json cases = Json::array();
    for (const CaseResult& r : file.cases) {
      cases.push_back({{"name", r.name}, {"passed", r.passed}, {"expected", r.expected}, {"actual", r.actual}});
    }
    items.push_back(
        {{"path", file.path}, {"kind", scriptKindName(file.kind)}, {"error", file.error}, {"cases", std::move(cases)}});
  }
  return items;
}

std::string padded(std::string text, size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

}  // namespace

int testScriptFiles(const std::vector<std::string>& paths, std::ostream& out, const PolicyToolOptions& options) {
  std::string searched;
  const std::vector<fs::path> found = filesToTest(paths, options, searched);
  if (found.empty()) {
    const std::string error = "no policy or strategy files found in " + searched;
    if (options.json) {
      out << Json{{"items", Json::array()}, {"passed", 0}, {"failed", 0}, {"error", error}}.dump(2) << "\n";
    } else {
      out << error << "\n";
    }
    return 2;
  }

  std::vector<std::string> warnings;
  const ScriptSet libs = loadLibs(options.scripts_dir, warnings);
  std::vector<FileTests> files;
  int passed = 0;
  int failed = 0;
  for (const fs::path& path : found) {
    const FileTests& file = files.emplace_back(testFile(path, libs, options.limits));
    if (!file.error.empty()) ++failed;
    for (const CaseResult& r : file.cases) {
      if (r.passed) {
        ++passed;
      } else {
        ++failed;
      }
    }
  }

  if (options.json) {
    out << Json{{"items", filesJson(files)}, {"passed", passed}, {"failed", failed}, {"warnings", warnings}}.dump(2)
        << "\n";
  } else {
    for (const std::string& warning : warnings) out << "warning: " << warning << "\n";
    printText(files, out);
    out << passed << " passed, " << failed << " failed\n";
  }
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
      << padded("POLICY", 24) << padded("LEVEL", 10) << padded("VERDICT", 9) << padded("TIME", 10) << "REASON\n";
  for (const PolicyDecision& d : evaluation.decisions) {
    std::string reason = d.record.reasons.empty() ? "" : d.record.reasons[0].get<std::string>();
    std::string line = padded(d.record.policy, 24) + padded(d.level, 10) + padded(d.record.verdict, 9) +
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
