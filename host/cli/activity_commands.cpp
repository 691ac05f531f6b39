// `tide instances ...`, `tide operations ...`, `tide events`, `tide logs`: what the control
// loop and the instances are doing, across plans.

#include <memory>

#include "host/cli/commands.h"
#include "host/cli/views.h"

namespace tide::cli {
namespace {

constexpr const char* kEventWaitSeconds = "30";

struct EventOptions {
  int64_t after = 0;
  bool follow = false;
};

// Long-polls for events past `after` and prints each batch as it arrives, until the
// process is interrupted or its output is closed.
Status followEvents(Session& session, int64_t after) {
  while (session.out) {
    TIDE_ASSIGN_OR_RETURN(
        Json page, session.client.get("/v1/events", {{"after", std::to_string(after)}, {"wait", kEventWaitSeconds}}));
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
    if (options->follow) return followEvents(session, options->after);
    Result<Json> list = session.client.getAll("/v1/events", {}, options->after);
    if (!list.isOk()) return list.status();
    session.print(*list, [](std::ostream& out, const Json& list) { printEventTable(out, list["items"]); });
    return Status::ok();
  });
  events->add_option("--after", options->after, "only events with a greater sequence number");
  events->add_flag("-f,--follow", options->follow, "wait for new events and print them as they happen");
}

// `tide logs INSTANCE`: the end of a meta instance's log, as the host's driver kept it.
void addLogsVerb(CLI::App& app, Verbs& verbs) {
  auto tail_bytes = std::make_shared<std::string>();
  addNamedVerb(app, verbs, "logs", "Print the end of a meta instance's log", "meta instance name",
               [tail_bytes](Session& session, const std::string& name) -> Status {
                 Query query;
                 if (!tail_bytes->empty()) query.emplace_back("tail_bytes", *tail_bytes);
                 TIDE_ASSIGN_OR_RETURN(std::string log,
                                       session.client.getText("/v1/instances/" + pathSegment(name) + "/logs", query));
                 if (session.json()) {
                   // A log is whatever the process wrote; bytes that are not UTF-8 become U+FFFD.
                   Json reply = {{"meta_instance", name}, {"log", log}};
                   session.out << reply.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
                 } else {
                   session.out << log;
                 }
                 return Status::ok();
               })
      ->add_option("--tail-bytes", *tail_bytes, "how many bytes from the end (default 65536, at most 8 MiB)");
}

}  // namespace

void addActivityCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* instances = addNoun(app, "instances", "Meta instances and their runtime instances");
  addListVerb(*instances, verbs, "instances", printInstanceTable,
              {{"plan", "only instances of this deployment plan"},
               {"state", "only meta instances in this state (ACTIVE, STOPPED, ...)"}});

  CLI::App* operations = addNoun(app, "operations", "Operations on instances and their approval");
  addListVerb(*operations, verbs, "operations", printOperationTable,
              {{"state", "only operations in this state (PENDING, PENDING_APPROVAL, ...)"},
               {"plan", "only operations of this deployment plan"},
               {"type", "only operations of this type (CREATE, UPDATE, RELOCATE, STOP, RESTART, DELETE)"}});
  addOperationDecisionVerbs(*operations, verbs);
  addOperationCancelVerb(*operations, verbs);

  addEventsVerb(app, verbs);
  addLogsVerb(app, verbs);
}

}  // namespace tide::cli
