// `tide instances ...`, `tide operations ...`, `tide events`, `tide logs`: what the control
// loop and the instances are doing, across plans.

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "host/cli/commands.h"
#include "host/cli/json_fields.h"
#include "host/cli/log_follow.h"
#include "host/cli/views.h"
#include "host/core/whole_number.h"
#include "host/model/transitions.h"

namespace tide::cli {
namespace {

constexpr const char* kEventWaitSeconds = "30";
// What the host hands out when no --tail-bytes is given (routes_instances.cpp).
constexpr int64_t kDefaultTailBytes = int64_t{64} << 10;
// How much of the log `logs -f` reads first, and at each look where the host does not say
// where its replies end (agent nodes): the more, the longer a burst between two looks can
// be and still be lined up with the look before (host/cli/log_follow.h).
constexpr int64_t kFollowWindowBytes = int64_t{1} << 20;
constexpr auto kLogPollInterval = std::chrono::seconds(1);

// --- instances ----------------------------------------------------------------------------

struct InstanceListFlags {
  std::string plan;
  std::string state;
  bool all = false;
};

bool isDeleted(const Json& entry) {
  return spells(entry.value(Json::json_pointer("/meta_instance/state"), std::string()), model::MetaState::kDeleted);
}

// `list`: DELETED meta instances only with --all or when --state asks for them.
void addInstanceListVerb(CLI::App& instances, Verbs& verbs) {
  auto flags = std::make_shared<InstanceListFlags>();
  CLI::App* verb = verbs.add(
      instances, "list", "List meta instances with their runtime instances (DELETED ones with --all)",
      [flags](Session& session) -> Status {
        Query query;
        if (!flags->plan.empty()) query.emplace_back("plan", flags->plan);
        if (!flags->state.empty()) query.emplace_back("state", flags->state);
        TIDE_ASSIGN_OR_RETURN(Json list, session.client.getAll("/v1/instances", query));
        if (!flags->all && flags->state.empty()) {
          Json& entries = list["items"];
          entries.erase(std::remove_if(entries.begin(), entries.end(), isDeleted), entries.end());
        }
        session.print(list, [](std::ostream& out, const Json& list) { printInstanceTable(out, list["items"]); });
        return Status::ok();
      });
  verb->add_option("--plan", flags->plan, "only instances of this deployment plan");
  verb->add_option("--state", flags->state, "only meta instances in this state (ACTIVE, STOPPED, ...)");
  verb->add_flag("--all", flags->all, "DELETED meta instances too");
}

void addInstanceShowVerb(CLI::App& instances, Verbs& verbs) {
  addNamedVerb(instances, verbs, "show", "Show a meta instance with its runtime instances and its newest operations",
               "meta instance name", [](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(instancePath(name)));
                 session.print(view, [](std::ostream& out, const Json& view) { printInstanceInfo(out, view); });
                 return Status::ok();
               });
}

// --- events -------------------------------------------------------------------------------

struct EventOptions {
  int64_t after = 0;
  int64_t limit = 0;  // 0: every event that matches
  bool follow = false;
  std::string kind;
  std::string subject;
  std::string actor;
  std::string plan;
  std::string state;
  std::string since;
  std::string until;

  // The filters given, as GET /v1/events takes them.
  Query filters() const {
    Query query;
    for (const auto& [name, value] : {std::pair{"kind", &kind}, std::pair{"subject", &subject},
                                      std::pair{"actor", &actor}, std::pair{"plan", &plan}, std::pair{"state", &state},
                                      std::pair{"since", &since}, std::pair{"until", &until}}) {
      if (!value->empty()) query.emplace_back(name, *value);
    }
    return query;
  }
};

// Long-polls for events past `after` and prints each batch as it arrives, until the
// process is interrupted or its output is closed.
Status followEvents(Session& session, const EventOptions& options) {
  int64_t after = options.after;
  while (session.out) {
    Query query = options.filters();
    query.emplace_back("after", std::to_string(after));
    query.emplace_back("wait", kEventWaitSeconds);
    TIDE_ASSIGN_OR_RETURN(Json page, session.client.get("/v1/events", query));
    const Json& events = page["items"];
    if (!events.is_array()) return Status::internal("GET /v1/events: the reply is not a list of items");
    if (events.empty()) continue;
    if (session.json()) {
      for (const Json& event : events) session.out << event.dump() << '\n';
    } else {
      printEventTable(session.out, events, {.show_total = false});
    }
    session.out.flush();
    after = events.back().value("seq", after);
  }
  return Status::ok();
}

void addEventsVerb(CLI::App& app, Verbs& verbs) {
  auto options = std::make_shared<EventOptions>();
  CLI::App* events = verbs.add(app, "events", "Show the event log; -f follows it", [options](Session& session) {
    if (options->follow) return followEvents(session, *options);
    Result<Json> list = session.client.getAll("/v1/events", options->filters(), options->after, options->limit);
    if (!list.isOk()) return list.status();
    session.print(*list, [](std::ostream& out, const Json& list) {
      printEventTable(out, list["items"]);
      printMoreFollow(out, list);
    });
    return Status::ok();
  });
  events->add_option("--after", options->after, "only events with a greater sequence number")->check(wholeNumber());
  CLI::Option* follow =
      events->add_flag("-f,--follow", options->follow, "wait for new events and print them as they happen");
  events->add_option("--kind", options->kind, "only events of this kind (operation.approval), or kinds (node.*)");
  events->add_option("--subject", options->subject, "only events about this subject (node/kind-worker, plan/NAME)");
  events->add_option("--actor", options->actor,
                     "only events written by this actor (a token's name, or controller, executor, observer, ...)");
  events->add_option("--plan", options->plan,
                     "only events of this deployment plan: the plan's own, its deployments', instances' and "
                     "operations'");
  events
      ->add_option("--state", options->state,
                   "only state changes into this state (FAILED, PAUSED, ...), or into any of several: A,B")
      ->check(stateList(model::everyState()));
  events
      ->add_option("--since", options->since,
                   "only events at or after this time: 2026-11-21T12:00:00Z, or a span back from now (30m, 2h, 7d)")
      ->check(timeBound());
  events->add_option("--until", options->until, "only events before this time (written as for --since)")
      ->check(timeBound())
      ->excludes(follow);
  events->add_option("--limit", options->limit, "at most this many events, the oldest that match first")
      ->check(positiveWholeNumber())
      ->excludes(follow);
}

// --- logs ---------------------------------------------------------------------------------

struct LogsFlags {
  int64_t tail_bytes = kDefaultTailBytes;
  bool follow = false;
  std::string application;  // "" = the only one
};

// A log as the CLI prints it with -o json: bytes that are not UTF-8 become U+FFFD.
std::string logJson(const std::string& name, const std::string& log, int indent) {
  Json reply = {{"meta_instance", name}, {"log", log}};
  return reply.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// The newest runtime instance of meta instance `name`, whose log the host hands out: "" when
// it has none yet.
Result<std::string> newestRuntimeOf(Session& session, const std::string& name) {
  TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(instancePath(name)));
  const Json& runtimes = view["runtime_instances"];
  if (!runtimes.is_array() || runtimes.empty()) return std::string();
  const Json& newest = runtimes.back();
  return "runtime instance " + std::to_string(newest.value(Json::json_pointer("/metadata/id"), int64_t{0})) + " on " +
         newest.value("node", "");
}

// A Tide-Log-Offset header's whole number; nullopt when it is absent or not one.
std::optional<int64_t> headerOffset(const std::string& text) {
  std::optional<int64_t> value = parseWholeNumber(text);
  if (value && *value < 0) return std::nullopt;
  return value;
}

// How far `logs -f` has read a log.
struct LogPlace {
  std::string file;    // the log file the host's last reply ended in; "" when it named none
  int64_t offset = 0;  // where in `file` that reply ended
  std::string seen;    // without a file: the last window read, which the next one is lined up with
};

// What the newest runtime instance's log adds to what `place` has read, and `place` moved on.
// Where the host says where its replies end (a process node's log) that is what follows the
// last reply's end (docs/api.md#following-a-log); elsewhere (an agent node's log) it is
// found by lining up the last `window` bytes with the look before (logUpdate). Nothing
// while the instance has no log.
Result<LogUpdate> readLogUpdate(Session& session, const std::string& name, const std::string& application,
                                int64_t window, LogPlace& place) {
  Query query = {{"tail_bytes", std::to_string(window)}};
  if (!place.file.empty()) query = {{"offset", std::to_string(place.offset)}, {"file", place.file}};
  if (!application.empty()) query.emplace_back("application", application);
  Result<TextReply> reply = session.client.getTextReply(instancePath(name) + "/logs", query);
  if (!reply.isOk() && reply.status().code() == Code::kNotFound) return LogUpdate{};
  TIDE_RETURN_IF_ERROR(reply.status());
  const std::string file = reply->header("Tide-Log-File");
  const std::optional<int64_t> offset = headerOffset(reply->header("Tide-Log-Offset"));
  LogUpdate update;
  if (!place.file.empty() && !file.empty() && offset) {
    update = {std::move(reply->body), reply->header("Tide-Log-Continues") == "false"};
  } else {
    update = logUpdate(place.seen, reply->body, static_cast<size_t>(window));
    place.seen = std::move(reply->body);
  }
  place.file = offset ? file : "";
  place.offset = offset.value_or(0);
  if (!place.file.empty()) place.seen.clear();
  return update;
}

// Prints the end of the log, then what each look a second later adds, until the process is
// interrupted or its output is closed. When the instance runs as a new runtime instance
// (a restart, a relocation), a "==> ... <==" line says so before its log.
Status followLog(Session& session, const std::string& name, const std::string& application, int64_t tail_bytes) {
  const int64_t window = std::max(tail_bytes, kFollowWindowBytes);
  LogPlace place;
  std::string runtime;
  bool first = true;
  while (session.out) {
    TIDE_ASSIGN_OR_RETURN(std::string runtime_now, newestRuntimeOf(session, name));
    TIDE_ASSIGN_OR_RETURN(LogUpdate update, readLogUpdate(session, name, application, window, place));
    std::string& added = update.added;
    if (first) added.erase(0, added.size() - std::min(added.size(), static_cast<size_t>(tail_bytes)));
    if (session.json()) {
      if (!added.empty()) session.out << logJson(name, added, -1) << '\n';
    } else {
      if (!first && runtime_now != runtime && !runtime_now.empty()) {
        session.out << "==> " << name << ": " << runtime_now << " <==\n";
      } else if (!first && update.restarted && !added.empty()) {
        session.out << "==> " << name << ": the log does not continue what was shown; its end follows <==\n";
      }
      session.out << added;
    }
    session.out.flush();
    runtime = std::move(runtime_now);
    first = false;
    std::this_thread::sleep_for(kLogPollInterval);
  }
  return Status::ok();
}

// `tide logs INSTANCE`: the end of a meta instance's log, as the host's driver kept it.
void addLogsVerb(CLI::App& app, Verbs& verbs) {
  auto flags = std::make_shared<LogsFlags>();
  CLI::App* verb = addNamedVerb(app, verbs, "logs", "Print the end of a meta instance's log; -f follows it",
                                "meta instance name", [flags](Session& session, const std::string& name) -> Status {
                                  if (flags->follow)
                                    return followLog(session, name, flags->application, flags->tail_bytes);
                                  Query query = {{"tail_bytes", std::to_string(flags->tail_bytes)}};
                                  if (!flags->application.empty())
                                    query.emplace_back("application", flags->application);
                                  TIDE_ASSIGN_OR_RETURN(std::string log,
                                                        session.client.getText(instancePath(name) + "/logs", query));
                                  if (session.json()) {
                                    session.out << logJson(name, log, 2) << '\n';
                                  } else {
                                    session.out << log;
                                  }
                                  return Status::ok();
                                });
  verb->add_option("--tail-bytes", flags->tail_bytes, "how many bytes from the end (default 65536, at most 8 MiB)")
      ->check(positiveWholeNumber());
  verb->add_option("--application", flags->application,
                   "the log of this application of the instance's plan (payload name); needed when the plan has "
                   "several");
  verb->add_flag("-f,--follow", flags->follow,
                 "keep printing what the instance writes, across restarts, until interrupted");
}

}  // namespace

void addActivityCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* instances = addNoun(app, "instances", "Meta instances and their runtime instances");
  addInstanceListVerb(*instances, verbs);
  addInstanceShowVerb(*instances, verbs);

  CLI::App* operations = addNoun(app, "operations", "Operations on instances and their approval");
  addListVerb(*operations, verbs, "operations", printOperationTable,
              {{"state", "only operations in this state (PENDING, PENDING_APPROVAL, ...), or any of several: A,B", "",
                stateList(model::statesOf(model::RecordKind::kOperation))},
               {"plan", "only operations of this deployment plan"},
               {"type", "only operations of this type (CREATE, UPDATE, RELOCATE, STOP, RESTART, DELETE)"},
               {"meta-instance", "only operations on this meta instance", "meta_instance"},
               {"actor",
                "only operations this actor asked for (requested_by: a token's name, or who added the "
                "deployment)"},
               {"since",
                "only operations created at or after this time: 2026-11-21T12:00:00Z, or a span back from now (30m, "
                "2h, 7d)",
                "", timeBound()},
               {"until", "only operations created before this time (written as for --since)", "", timeBound()}},
              ListLimit::kOffered);
  addOperationShowVerb(*operations, verbs);
  addOperationDecisionVerbs(*operations, verbs);
  addOperationCancelVerb(*operations, verbs);

  addEventsVerb(app, verbs);
  addLogsVerb(app, verbs);
}

}  // namespace tide::cli
