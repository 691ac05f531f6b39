// `tide policy test|eval` and `tide scripts list|reload|test`: the approval policies and the
// scripts the host runs (docs/architecture.md#approval, docs/architecture.md#the-lua-host,
// docs/architecture.md#cli-and-host-configuration). `scripts test` (alias `policy test`) and `policy eval --offline`
// run here without a server (host/lua/registry/policy_tool.h); the rest ask the running host.

#include <fstream>
#include <memory>
#include <sstream>

#include "host/cli/commands.h"
#include "host/cli/table.h"
#include "host/lua/registry/policy_tool.h"

namespace tide::cli {
namespace {

std::string shortSha(const Json& value) {
  std::string sha = value.is_string() ? value.get<std::string>() : "";
  return sha.substr(0, 12);
}

std::string reasonsText(const Json& reasons) {
  std::string text;
  if (!reasons.is_array()) return text;
  for (const Json& reason : reasons) {
    if (!text.empty()) text += "\n";
    text += reason.is_string() ? reason.get<std::string>() : reason.dump();
  }
  return text;
}

void printEvaluation(std::ostream& out, const Json& evaluation) {
  out << "verdict: " << evaluation.value("outcome", "") << "\n";
  out << "reason:  " << evaluation.value("summary", "") << "\n";
  Table table({"Policy", "Level", "Verdict", "Reasons", "SHA256", "Error"}, {.row_separator = true});
  for (const Json& d : evaluation.value("decisions", Json::array())) {
    table.addRow({d.value("policy", ""), d.value("level", ""), d.value("verdict", ""),
                  reasonsText(d.value("reasons", Json::array())), shortSha(d.value("script_sha256", Json())),
                  d.value("error_class", "")});
  }
  table.print(out);
}

void printScriptTable(std::ostream& out, const Json& items) {
  Table table({"Path", "Kind", "Status", "SHA256", "Loaded At", "Error"}, {.align_left = true});
  for (const Json& s : items) {
    table.addRow({s.value("path", ""), s.value("kind", ""), s.value("status", ""),
                  shortSha(s.value("active_sha256", Json())), s.value("loaded_at", ""), s.value("last_error", "")});
  }
  table.print(out);
}

void printReloadSummary(std::ostream& out, const Json& summary) {
  out << "scripts reloaded (set version " << summary.value("version", 0) << "): " << summary.value("loaded", 0)
      << " loaded, " << summary.value("unchanged", 0) << " unchanged, " << summary.value("failed", 0) << " failed, "
      << summary.value("unloaded", 0) << " unloaded\n";
  for (const Json& error : summary.value("errors", Json::array())) out << "  " << error.get<std::string>() << "\n";
}

struct PolicyFlags {
  std::string op_file;
  bool offline = false;
  std::string policies_dir = "policies";
  std::string scripts_dir = "scripts";
};

Result<Json> readOpFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::invalidArgument("cannot read " + path, {{"--op", "cannot read the file", path}});
  std::stringstream text;
  text << in.rdbuf();
  Json document = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return Status::invalidArgument(path + " is not a JSON object", {{"--op", "not a JSON object", path}});
  }
  return document;
}

struct ScriptTestFlags {
  std::vector<std::string> paths;
  std::string policies_dir = "policies";
  std::string scripts_dir = "scripts";
  std::string output = "table";
};

// `test [PATH...]` under `noun`: `tide scripts test`, and `tide policy test`, its alias.
void addScriptTestVerb(CLI::App& noun, const std::string& description, OfflineAction& offline) {
  auto flags = std::make_shared<ScriptTestFlags>();
  CLI::App* test = noun.add_subcommand("test", description);
  test->add_option("paths", flags->paths,
                   "policy or strategy files, or directories of them (files in a directory named "
                   "rollout are strategies)");
  test->add_option("--policies", flags->policies_dir, "policies directory tested by default")->capture_default_str();
  test->add_option("--scripts", flags->scripts_dir,
                   "where libs (<dir>/lib) and, by default, strategies (<dir>/rollout) come from")
      ->capture_default_str();
  test->add_option("-o,--output", flags->output, "output format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  test->callback([flags, &offline] {
    offline = [flags](std::ostream& out) {
      lua::PolicyToolOptions options;
      options.policies_dir = flags->policies_dir;
      options.scripts_dir = flags->scripts_dir;
      options.json = flags->output == "json";
      return lua::testScriptFiles(flags->paths, out, options);
    };
  });
}

}  // namespace

void addPolicyCommands(CLI::App& app, Verbs& verbs, OfflineAction& offline) {
  auto flags = std::make_shared<PolicyFlags>();
  CLI::App* policy = addNoun(app, "policy", "Approval policies: run their tests, evaluate an op");

  addScriptTestVerb(*policy, "Run the tests of policy and strategy files offline (alias of `tide scripts test`)",
                    offline);

  CLI::App* eval =
      verbs.add(*policy, "eval", "Evaluate an op snapshot against the host's policies (dry run)",
                [flags](Session& session) -> Status {
                  if (flags->offline) {
                    lua::PolicyToolOptions options;
                    options.policies_dir = flags->policies_dir;
                    options.scripts_dir = flags->scripts_dir;
                    options.json = session.json();
                    if (lua::evalOpFile(flags->op_file, session.out, options) != 0) {
                      return Status::invalidArgument("cannot evaluate " + flags->op_file);
                    }
                    return Status::ok();
                  }
                  TIDE_ASSIGN_OR_RETURN(Json document, readOpFile(flags->op_file));
                  TIDE_ASSIGN_OR_RETURN(Json evaluation, session.client.post("/v1/policies/evaluate", document));
                  session.print(evaluation, printEvaluation);
                  return Status::ok();
                });
  eval->add_option("--op", flags->op_file, "op snapshot (JSON): the op, or {\"op\": ..., \"ctx\": ...}")->required();
  eval->add_flag("--offline", flags->offline, "evaluate here against --policies instead of asking the host");
  eval->add_option("--policies", flags->policies_dir, "policies directory for --offline")->capture_default_str();
  eval->add_option("--scripts", flags->scripts_dir, "scripts directory (libs) for --offline")->capture_default_str();

  CLI::App* scripts = addNoun(app, "scripts", "The Lua scripts the host runs");
  verbs.add(*scripts, "list", "Show every script file, its active version and last error", [](Session& session) {
    TIDE_ASSIGN_OR_RETURN(Json list, session.client.get("/v1/scripts"));
    session.print(list, [](std::ostream& out, const Json& list) { printScriptTable(out, list["items"]); });
    return Status::ok();
  });
  verbs.add(*scripts, "reload", "Reload every script file now", [](Session& session) {
    TIDE_ASSIGN_OR_RETURN(Json summary, session.client.post("/v1/scripts/reload"));
    session.print(summary, printReloadSummary);
    return Status::ok();
  });
  addScriptTestVerb(*scripts,
                    "Run the tests of policy and strategy files offline (default: ./policies and "
                    "./scripts/rollout)",
                    offline);
}

}  // namespace tide::cli
