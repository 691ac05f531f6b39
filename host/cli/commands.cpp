#include "host/cli/commands.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "host/cli/dry_run_view.h"
#include "host/cli/terminal_text.h"
#include "host/cli/views.h"
#include "host/config/field_reader.h"
#include "host/core/clock.h"

namespace tide::cli {
namespace {

constexpr const char* kLocalServers[] = {"http://127.0.0.1:7700", "http://localhost:7700"};
constexpr const char* kDefaultDataDir = "./.tide";
constexpr const char* kAdminTokenFile = "admin.token";

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string trim(std::string text) {
  const char* space = " \t\r\n";
  size_t start = text.find_first_not_of(space);
  if (start == std::string::npos) return "";
  return text.substr(start, text.find_last_not_of(space) - start + 1);
}

bool isDefaultLocalServer(std::string server) {
  while (!server.empty() && server.back() == '/') server.pop_back();
  for (const char* local : kLocalServers) {
    if (server == local) return true;
  }
  return false;
}

template <void (*print)(std::ostream&, const Json&)>
Status printTable(Session& session, const Json& records) {
  print(session.out, records);
  return Status::ok();
}

struct CreatedKind {
  const char* key;      // in the manifests reply, and the collection under /v1/
  const char* heading;  // when the reply holds several kinds
  Status (*print)(Session&, const Json& records);
};

constexpr CreatedKind kCreatedKinds[] = {
    {"capabilities", "Compute Capabilities", printTable<printCapabilityTable>},
    {"clusters", "Clusters", printTable<printClusterTable>},
    {"nodes", "Nodes", printTable<printNodeTable>},
    {"plans", "Deployment Plans", printPlanList},
};

const Json& namesOf(const Json& created, const char* kind) {
  static const Json kNone = Json::array();
  auto it = created.find(kind);
  return it != created.end() && it->is_array() ? *it : kNone;
}

// The records `names` of `kind`, each read back with GET /v1/<kind>/<name>.
Result<Json> readBack(Session& session, const std::string& kind, const Json& names) {
  Json records = Json::array();
  for (const Json& name : names) {
    TIDE_ASSIGN_OR_RETURN(Json record, session.client.get("/v1/" + kind + "/" + pathSegment(name.get<std::string>())));
    // A plan reads back as its show view.
    records.push_back(kind == "plans" ? record["plan"] : record);
  }
  return records;
}

}  // namespace

Result<Json> applyManifestFile(Session& session, const std::string& path, bool dry_run) {
  TIDE_ASSIGN_OR_RETURN(std::string text, config::readInputFile(path));
  Query query = {{"source", path}};
  if (dry_run) query.emplace_back("dry_run", "true");
  return session.client.postText("/v1/manifests", text, "application/yaml", query);
}

namespace {

// A manifests reply names the created records by kind:
// {"capabilities":[names], "clusters", "nodes", "plans", "deployments":["plan/id"]}.
Status printCreated(Session& session, const Json& created) {
  for (const Json& plan : namesOf(created, "plans")) {
    session.out << "Deployment plan created successfully: " << plan.get<std::string>() << '\n';
  }
  for (const Json& deployment : namesOf(created, "deployments")) {
    session.out << "Deployment created successfully: " << deployment.get<std::string>() << '\n';
  }
  int kinds = 0;
  for (const CreatedKind& kind : kCreatedKinds) kinds += namesOf(created, kind.key).empty() ? 0 : 1;
  bool first = true;
  for (const CreatedKind& kind : kCreatedKinds) {
    if (namesOf(created, kind.key).empty()) continue;
    TIDE_ASSIGN_OR_RETURN(Json records, readBack(session, kind.key, namesOf(created, kind.key)));
    if (!first) session.out << '\n';
    first = false;
    if (kinds > 1) printHeading(session.out, kind.heading);
    TIDE_RETURN_IF_ERROR(kind.print(session, records));
  }
  return Status::ok();
}

}  // namespace

// "request body:7:3" → "<path>:7:3": the server parsed the upload without knowing its name.
namespace {

std::string relocate(const std::string& location, const std::string& from, const std::string& to) {
  return location.starts_with(from + ":") ? to + location.substr(from.size()) : location;
}

}  // namespace

std::string sourceOfLocation(const std::string& location) {
  std::string_view rest = location;
  for (int part = 0; part < 2; ++part) {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == rest.size() ||
        rest.find_first_not_of("0123456789", colon + 1) != std::string_view::npos) {
      break;
    }
    rest = rest.substr(0, colon);
  }
  return rest.size() == location.size() ? "" : std::string(rest);
}

Status locateInFile(const Status& status, const std::string& path) {
  std::string source;
  for (const ErrorDetail& detail : status.details()) {
    source = sourceOfLocation(detail.location);
    if (!source.empty()) break;
  }
  if (source.empty()) return status;
  std::vector<ErrorDetail> details = status.details();
  for (ErrorDetail& detail : details) detail.location = relocate(detail.location, source, path);
  return Status(status.code(), relocate(status.message(), source, path), std::move(details));
}

void printWarnings(Session& session, const Json& reply, const std::string& path) {
  for (const Json& warning : reply.value("warnings", Json::array())) {
    std::string location = warning.value("location", "");
    if (const std::string source = sourceOfLocation(location); !path.empty() && !source.empty()) {
      location = relocate(location, source, path);
    }
    session.out << "warning: " << (location.empty() ? "" : location + ": ") << warning.value("field", "") << ": "
                << warning.value("message", "") << '\n';
  }
}

std::string instancePath(const std::string& name) { return "/v1/instances/" + pathSegment(name); }

Endpoint resolveEndpoint(const ClientFlags& flags) {
  Endpoint endpoint;
  endpoint.server = !flags.server.empty() ? flags.server : environment("TIDE_SERVER");
  if (endpoint.server.empty()) endpoint.server = std::string(kDefaultServer);
  endpoint.token = !flags.token.empty() ? flags.token : environment("TIDE_TOKEN");
  endpoint.ca_file = !flags.ca_file.empty() ? flags.ca_file : environment("TIDE_CA_FILE");
  if (endpoint.token.empty() && isDefaultLocalServer(endpoint.server)) {
    std::string data_dir = environment("TIDE_DATA_DIR");
    if (data_dir.empty()) data_dir = kDefaultDataDir;
    std::ifstream file(data_dir + "/" + kAdminTokenFile);
    std::stringstream text;
    text << file.rdbuf();
    endpoint.token = trim(text.str());
  }
  return endpoint;
}

CLI::App* Verbs::add(CLI::App& parent, const std::string& name, const std::string& description, VerbAction action) {
  CLI::App* verb = parent.add_subcommand(name, description);
  verb->add_option("--server", flags_.server, "tide's URL (default: $TIDE_SERVER, else http://127.0.0.1:7700)");
  verb->add_option("--token", flags_.token,
                   "bearer token (default: $TIDE_TOKEN, else, for the default local server, "
                   "the admin.token file in $TIDE_DATA_DIR or ./.tide)");
  verb->add_option("--ca-file", flags_.ca_file,
                   "PEM file of the CA (or the self-signed certificate) an https:// server's certificate is checked "
                   "against (default: $TIDE_CA_FILE, else the system's CAs)");
  verb->add_option("-o,--output", flags_.output, "output format: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  const VerbAction* stored = &actions_.emplace_back(std::move(action));
  verb->callback([this, stored] { chosen_ = stored; });
  return verb;
}

Status Verbs::runChosen(std::ostream& out) const {
  Client client(resolveEndpoint(flags_));
  TerminalSafeBuffer safe_buffer(out);
  std::ostream safe_out(&safe_buffer);
  Session session{client, flags_.output == "json" ? OutputFormat::kJson : OutputFormat::kTable, safe_out};
  if (&out == &std::cout && ::isatty(STDOUT_FILENO)) session.terminal = &out;
  Status status = (*chosen_)(session);
  safe_out.flush();
  return status;
}

CLI::App* addNamedVerb(CLI::App& parent, Verbs& verbs, const std::string& name, const std::string& description,
                       const std::string& argument_help, NamedAction action) {
  auto argument = std::make_shared<std::string>();
  CLI::App* verb = verbs.add(parent, name, description, [argument, action = std::move(action)](Session& session) {
    return action(session, *argument);
  });
  verb->add_option("name", *argument, argument_help)->required();
  return verb;
}

CLI::App* addNoun(CLI::App& app, const std::string& name, const std::string& description) {
  CLI::App* noun = app.add_subcommand(name, description);
  noun->require_subcommand(1);
  return noun;
}

Status printPlanList(Session& session, const Json& plans) {
  std::map<std::string, int64_t> deployment_counts;
  for (const Json& plan : plans) {
    std::string name = plan.value("name", "");
    TIDE_ASSIGN_OR_RETURN(Json deployments, session.client.getAll("/v1/plans/" + pathSegment(name) + "/deployments"));
    deployment_counts[name] = static_cast<int64_t>(deployments["items"].size());
  }
  printPlanTable(session.out, plans, deployment_counts);
  return Status::ok();
}

CLI::App* addCreateVerb(CLI::App& noun, Verbs& verbs, const std::string& description) {
  auto file = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* verb = verbs.add(noun, "create", description, [file, dry_run](Session& session) -> Status {
    TIDE_ASSIGN_OR_RETURN(Json created, applyManifestFile(session, *file, *dry_run));
    if (session.json()) {
      session.printJson(created);
      return Status::ok();
    }
    if (*dry_run) {
      printManifestDiff(session.out, created);
      return Status::ok();
    }
    TIDE_RETURN_IF_ERROR(printCreated(session, created));
    printWarnings(session, created, *file);
    return Status::ok();
  });
  verb->add_option("-m,--manifest", *file, "YAML manifest")->required();
  verb->add_flag("--dry-run", *dry_run, "say what it would create (and what exists already), write nothing");
  return verb;
}

CLI::App* addListVerb(CLI::App& noun, Verbs& verbs, const std::string& collection, ListPrinter print,
                      const std::vector<ListFilter>& filters, ListLimit limit) {
  auto query = std::make_shared<Query>();
  auto window = std::make_shared<std::pair<int64_t, int64_t>>(0, 0);  // --after, --limit (0: every item)
  CLI::App* verb =
      verbs.add(noun, "list", "List " + collection, [query, window, collection, print](Session& session) -> Status {
        Query given;
        for (const auto& [name, value] : *query) {
          if (!value.empty()) given.emplace_back(name, value);
        }
        TIDE_ASSIGN_OR_RETURN(Json list,
                              session.client.getAll("/v1/" + collection, given, window->first, window->second));
        session.print(list, [print](std::ostream& out, const Json& list) {
          print(out, list["items"]);
          printMoreFollow(out, list);
        });
        return Status::ok();
      });
  query->reserve(filters.size());  // options bind to the elements: no reallocation after this
  for (const ListFilter& filter : filters) {
    query->emplace_back(filter.parameter.empty() ? filter.name : filter.parameter, "");
    CLI::Option* option = verb->add_option("--" + filter.name, query->back().second, filter.help);
    if (filter.check) option->check(*filter.check);
  }
  if (limit == ListLimit::kOffered) {
    verb->add_option("--after", window->first, "only " + collection + " past this id")->check(wholeNumber());
    verb->add_option("--limit", window->second, "at most this many " + collection + ", the oldest that match first")
        ->check(positiveWholeNumber());
  }
  return verb;
}

void printMoreFollow(std::ostream& out, const Json& list) {
  auto next = list.find("next_after");
  if (next == list.end() || !next->is_number_integer()) return;
  out << "More follow: --after " << next->get<int64_t>() << '\n';
}

// --- option values --------------------------------------------------------------------------

namespace {

constexpr const char* kReadableCheck = "tide-readable";  // the name of the checks below

// The integer `text` spells (an optional sign, then digits); nullopt, with `too_large` set
// when the digits are beyond int64_t, otherwise.
std::optional<int64_t> readInteger(const std::string& text, bool& too_large) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  int64_t value = 0;
  auto [stop, error] = std::from_chars(begin, end, value);
  too_large = error == std::errc::result_out_of_range;
  if (error != std::errc() || stop != end) return std::nullopt;
  return value;
}

// A finite number written in decimal ("2", "0.5", "1e3"), or nullopt.
std::optional<double> readNumber(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  char* stop = nullptr;
  const double value = std::strtod(text.c_str(), &stop);
  if (stop != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string refusal(const std::string& value, const std::string& what) { return "'" + value + "' is not " + what; }

// Integers of at least `minimum`; `what` names them in a refusal ("a positive whole number").
CLI::Validator integerCheck(int64_t minimum, const std::string& what, const std::string& description) {
  return CLI::Validator(
      [minimum, what](std::string& value) -> std::string {
        bool too_large = false;
        std::optional<int64_t> parsed = readInteger(value, too_large);
        if (too_large && !value.starts_with('-')) return "'" + value + "' is too large";
        return parsed && *parsed >= minimum ? "" : refusal(value, what);
      },
      description, kReadableCheck);
}

// Finite numbers for which `fits` holds.
CLI::Validator numberCheck(bool (*fits)(double), const std::string& what, const std::string& description) {
  return CLI::Validator(
      [fits, what](std::string& value) -> std::string {
        std::optional<double> parsed = readNumber(value);
        return parsed && fits(*parsed) ? "" : refusal(value, what);
      },
      description, kReadableCheck);
}

enum class NumberKind { kNone, kInteger, kReal };

// CLI11 names an option's value type INT, UINT or FLOAT (then ":" and its checks).
NumberKind numberKindOf(const CLI::Option& option) {
  if (option.get_type_size() == 0) return NumberKind::kNone;  // a flag
  const std::string type = option.get_type_name().substr(0, option.get_type_name().find(':'));
  if (type == "INT" || type == "UINT") return NumberKind::kInteger;
  if (type == "FLOAT") return NumberKind::kReal;
  return NumberKind::kNone;
}

// The `index`th check of `option`, or nullptr past the last (CLI11 has no count of them and
// throws instead).
CLI::Validator* checkAt(CLI::Option& option, int index) {
  try {
    return option.get_validator(index);
  } catch (const CLI::OptionNotFound&) {
    return nullptr;
  }
}

// Replaces CLI11's PositiveNumber and NonNegativeNumber (which carry these descriptions and
// no name) with readable checks; whether `option` has a readable check of its value then.
bool replaceRangeChecks(CLI::Option& option, NumberKind kind) {
  bool readable = false;
  for (int i = 0; CLI::Validator* check = checkAt(option, i); ++i) {
    if (check->get_name().empty() && check->get_description() == "POSITIVE") {
      *check = kind == NumberKind::kInteger ? positiveWholeNumber() : positiveNumber();
    } else if (check->get_name().empty() && check->get_description() == "NONNEGATIVE") {
      *check = kind == NumberKind::kInteger
                   ? wholeNumber()
                   : numberCheck([](double n) { return n >= 0; }, "a number of 0 or more", "NONNEGATIVE");
    }
    readable = readable || check->get_name() == kReadableCheck;
  }
  return readable;
}

}  // namespace

CLI::Validator positiveWholeNumber() { return integerCheck(1, "a positive whole number", "POSITIVE"); }
CLI::Validator wholeNumber() { return integerCheck(0, "a whole number", "NONNEGATIVE"); }
CLI::Validator positiveNumber() {
  return numberCheck([](double n) { return n > 0; }, "a positive number", "POSITIVE");
}

CLI::Validator timeBound() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (parseWholeDuration(value) || parseTimestamp(value).isOk()) return "";
        return refusal(value, "a timestamp such as 2026-11-21T12:00:00Z or a span back from now such as 30m, 2h or 7d");
      },
      "TIME", kReadableCheck);
}

CLI::Validator stateList(const std::vector<std::string>& states) {
  return CLI::Validator(
      [states](std::string& value) -> std::string {
        std::string_view rest = value;
        while (true) {
          const size_t comma = rest.find(',');
          const std::string state(rest.substr(0, comma));
          if (std::find(states.begin(), states.end(), state) == states.end()) {
            std::string known;
            for (const std::string& s : states) known += (known.empty() ? "" : ", ") + s;
            return refusal(state, "a state (" + known + ")");
          }
          if (comma == std::string_view::npos) return "";
          rest.remove_prefix(comma + 1);
        }
      },
      "STATE[,STATE...]", kReadableCheck);
}

void checkNumbersReadably(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const NumberKind kind = numberKindOf(*option);
    if (kind == NumberKind::kNone) continue;
    if (replaceRangeChecks(*option, kind)) continue;
    option->transform(kind == NumberKind::kInteger ? integerCheck(INT64_MIN, "a whole number", "")
                                                   : numberCheck([](double) { return true; }, "a number", ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) checkNumbersReadably(*sub);
}

}  // namespace tide::cli
