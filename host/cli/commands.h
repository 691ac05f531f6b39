#pragma once
// The client verbs of the `tide` CLI and what they share. Each noun has one file that adds
// its verbs (inventory_commands.cpp, deployment_commands.cpp with operation_commands.cpp and
// rollout_commands.cpp, activity_commands.cpp); a new verb is one `verbs.add(...)` call
// with an action `Status(Session&)` that talks to the API through session.client and
// prints a table or, with `-o json`, the server's JSON.

#include <functional>
#include <list>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "host/cli/client.h"
#include "host/core/status.h"

namespace tide::cli {

enum class OutputFormat { kTable, kJson };

// What a verb's action runs with.
struct Session {
  Client& client;
  OutputFormat format;
  std::ostream& out;
  // The raw stdout when it is a terminal, else null: for a verb that redraws a line in
  // place (`tide deployment watch`). What goes there must be stripped of terminal controls
  // first (stripTerminalControls), and `out` flushed before.
  std::ostream* terminal = nullptr;

  bool json() const { return format == OutputFormat::kJson; }
  // The server's JSON, pretty.
  void printJson(const Json& value) const { out << value.dump(2) << '\n'; }
  // `value` as `-o` asks: pretty JSON, or what `table` makes of it.
  void print(const Json& value, const std::function<void(std::ostream&, const Json&)>& table) const {
    if (json()) {
      printJson(value);
    } else {
      table(out, value);
    }
  }
};

using VerbAction = std::function<Status(Session&)>;
// An action on the record named by the verb's one positional argument.
using NamedAction = std::function<Status(Session&, const std::string& name)>;

// "/v1/instances/<name>", the meta instance's name encoded as one path segment.
std::string instancePath(const std::string& name);

// The options every client verb takes.
struct ClientFlags {
  std::string server;   // --server, else $TIDE_SERVER, else kDefaultServer
  std::string token;    // --token, else $TIDE_TOKEN, else the local admin token file
  std::string ca_file;  // --ca-file, else $TIDE_CA_FILE
  std::string output = "table";
};

// Where to send requests and with which token, from the flags and the environment: the
// token falls back to <data-dir>/admin.token ($TIDE_DATA_DIR, else ./.tide) only when the
// server is the default local address, so a local admin token never leaves the machine.
Endpoint resolveEndpoint(const ClientFlags& flags);

// Collects the client verbs of the command tree and remembers the one parsing chose.
class Verbs {
 public:
  // Adds verb `name` under `parent` with --server, --token and -o; `action` runs when the
  // command line names this verb. Returns the verb for its own options and arguments.
  CLI::App* add(CLI::App& parent, const std::string& name, const std::string& description, VerbAction action);

  bool chosen() const { return chosen_ != nullptr; }
  // Whether the command line asked for `-o json`.
  bool jsonOutput() const { return flags_.output == "json"; }
  // Runs the chosen verb, its output passed through stripTerminalControls. REQUIRES: chosen().
  Status runChosen(std::ostream& out) const;

 private:
  ClientFlags flags_;              // one set: a command line names one verb
  std::list<VerbAction> actions_;  // stable addresses for chosen_
  const VerbAction* chosen_ = nullptr;
};

// `add` for a verb taking one positional argument, the name of a record (`tide node show NAME`).
// Returns the verb for further options.
CLI::App* addNamedVerb(CLI::App& parent, Verbs& verbs, const std::string& name, const std::string& description,
                       const std::string& argument_help, NamedAction action);

// A noun with verbs beneath it ("node"), which must be followed by one of them.
CLI::App* addNoun(CLI::App& app, const std::string& name, const std::string& description);

using ListPrinter = void (*)(std::ostream&, const Json& items);
// A query parameter a list verb may pass on, as `--<name> VALUE`.
struct ListFilter {
  std::string name;
  std::string help;
  std::string parameter = "";                          // the query parameter, when it is not `name`
  std::optional<CLI::Validator> check = std::nullopt;  // refuses a bad value before anything is asked
};

// Whether a list verb offers `--limit N` (only the first N items) and `--after ID` (those
// past the record with that id or seq), for a collection that has many.
enum class ListLimit { kNone, kOffered };

// `list`: every page of GET /v1/<collection> (with the filters given on the command line)
// printed as `print` makes it, or as {"items":[...]} with `-o json`. With --limit, the first
// N, and when more follow, "next_after" in the JSON and a line saying where they start.
CLI::App* addListVerb(CLI::App& noun, Verbs& verbs, const std::string& collection, ListPrinter print,
                      const std::vector<ListFilter>& filters = {}, ListLimit limit = ListLimit::kNone);
// The line under a list that --limit cut short ({"next_after": N} in `list`): "More follow:
// --after N". Nothing for a whole list.
void printMoreFollow(std::ostream& out, const Json& list);

// `create -m FILE`: POST /v1/manifests with the file as YAML (error locations name the
// file), then a success line per plan and deployment and a table per kind of record the
// manifest created (with a heading when there are several kinds). A manifest may hold
// any kinds, whichever noun's `create` sends it.
CLI::App* addCreateVerb(CLI::App& noun, Verbs& verbs, const std::string& description);
// `status` with the server's "request body:N" locations pointing into the file at `path`.
Status locateInFile(const Status& status, const std::string& path);
// The source of an error location: "broken.yaml" of "broken.yaml:5:14" (or of
// "broken.yaml:5"); "" when the location ends in no line.
std::string sourceOfLocation(const std::string& location);
// One "warning: <location>: <field>: <message>" line per entry of the reply's `warnings`
// (what the server accepted but the user should look at), locations pointing into `path`.
void printWarnings(Session& session, const Json& reply, const std::string& path = "");
// The deployment plans table for plan records, with # Deployments read from the server.
Status printPlanList(Session& session, const Json& plans);

void addInventoryCommands(CLI::App& app, Verbs& verbs);   // node, capability, cluster
void addDeploymentCommands(CLI::App& app, Verbs& verbs);  // deployment
// approve-operation, reject-operation, operate: under the `deployment` noun.
void addOperationVerbs(CLI::App& deployment, Verbs& verbs);
// cancel: under the `operations` noun.
void addOperationCancelVerb(CLI::App& operations, Verbs& verbs);
// approve ID [--override --reason TEXT], reject ID: under the `operations` noun.
void addOperationDecisionVerbs(CLI::App& operations, Verbs& verbs);
// promote, abort, pause, resume, rollback, retry, watch: under the `deployment` noun.
void addRolloutVerbs(CLI::App& deployment, Verbs& verbs);
// scale PLAN --instances N, set-image PLAN PAYLOAD=IMAGE...: under the `deployment` noun.
void addScaleVerbs(CLI::App& deployment, Verbs& verbs);
void addActivityCommands(CLI::App& app, Verbs& verbs);  // instances, operations, events, logs
void addTokenCommands(CLI::App& app, Verbs& verbs);     // token
void addPlanCommands(CLI::App& app, Verbs& verbs);      // plan diff
// POST /v1/manifests of the file at `path` (its name goes along: the server's error locations
// and warnings name it); with `dry_run`, the server's dry run of it (docs/api.md#dry-runs).
Result<Json> applyManifestFile(Session& session, const std::string& path, bool dry_run = false);
void addAuditCommands(CLI::App& app, Verbs& verbs);     // audit
void addControlCommands(CLI::App& app, Verbs& verbs);   // resume
void addDoctorCommand(CLI::App& app, Verbs& verbs);     // doctor
void addStatusCommand(CLI::App& app, Verbs& verbs);     // status
// show ID: under the `operations` noun.
void addOperationShowVerb(CLI::App& operations, Verbs& verbs);

// --- option values ------------------------------------------------------------------------
// Checks whose refusals name the option and the value as typed, e.g. "--operation-id: 'abc'
// is not a positive whole number" (CLI11's own range checks print the range of a double,
// a number 309 digits long).
CLI::Validator positiveWholeNumber();  // 1, 2, ... up to INT64_MAX
CLI::Validator wholeNumber();          // 0, 1, 2, ... up to INT64_MAX
CLI::Validator positiveNumber();       // any number above 0, e.g. 0.5
// --since and --until: an RFC 3339 UTC timestamp ("2026-11-21T12:00:00Z") or a span back
// from now ("30m", "2h", "7d"), as the API's `since` and `until` take them; the host reads
// a span on its own clock.
CLI::Validator timeBound();
// One of `states`, or several comma-separated (`A,B`); a refusal names the first that is not.
CLI::Validator stateList(const std::vector<std::string>& states);
// Gives every option under `app` that takes a number a readable check of its value, run
// before the checks it has (a whole number for integer options, a number for the others),
// and makes CLI11's PositiveNumber and NonNegativeNumber checks refuse readably. Call once
// every command is added.
void checkNumbersReadably(CLI::App& app);

// A verb that runs without a server and chooses its own exit code (`tide scripts test`).
using OfflineAction = std::function<int(std::ostream& out)>;
// policy, scripts; `offline` is set when the command line names an offline verb.
void addPolicyCommands(CLI::App& app, Verbs& verbs, OfflineAction& offline);

// completion bash|zsh: prints a completion script for the whole of `app`, whose tree it
// reads when it runs, so the script names every command and option there is.
void addCompletionCommand(CLI::App& app, OfflineAction& offline);
// The scripts `tide completion` prints, from `app`'s commands, options and their choices.
std::string bashCompletionScript(const CLI::App& app);
std::string zshCompletionScript(const CLI::App& app);

}  // namespace tide::cli
