// `tide deployment approve-operation | reject-operation | operate`: what a person does to
// the operations and instances of one plan (docs/architecture.md#approval,
// docs/architecture.md#cli-and-host-configuration). Each verb finds its target itself when there is exactly one, and
// otherwise names the candidates. `tide operations approve|reject ID` decide one operation by
// its ID, `approve --override --reason` overriding a soft deny (docs/architecture.md#human-approval);
// `tide operations cancel ID` withdraws one operation that has not started
// (docs/architecture.md#cancelling-an-operation); `tide operations show ID` prints one with
// its policy decisions and approvals.

#include <memory>
#include <vector>

#include "host/cli/commands.h"
#include "host/cli/json_fields.h"
#include "host/cli/views.h"

namespace tide::cli {
namespace {

std::string operationPath(int64_t id) { return "/v1/operations/" + std::to_string(id); }

int64_t operationIdOf(const Json& operation) { return operation.value(Json::json_pointer("/metadata/id"), int64_t{0}); }

// "7 (CREATE nginx-service-ab12cd)"
std::string describeOperation(const Json& operation) {
  return std::to_string(operationIdOf(operation)) + " (" + operation.value("type", "") + " " +
         operation.value("meta_instance", "") + ")";
}

// "approved operation 7 (DELETE web-x): 1 of 2 approvals (alice); 1 more needed": a decision's
// reply, with how far the operation's approvals got when it needs more than one.
std::string describeDecided(const Json& reply, const std::string& past) {
  std::string out = past + " operation " + describeOperation(reply);
  const Json approvals = reply.value("approvals", Json::object());
  const int64_t still_needed = approvals.value("still_needed", int64_t{0});
  if (approvals.value("required", 1) > 1 || still_needed > 0) out += ": " + approvals.value("summary", std::string());
  if (still_needed > 0) out += "; " + std::to_string(still_needed) + " more needed";
  return out;
}

// The items of a getAll reply as a vector.
std::vector<Json> itemsOf(Json list) {
  std::vector<Json> items;
  for (Json& item : list["items"]) items.push_back(std::move(item));
  return items;
}

// --- approve-operation, reject-operation ----------------------------------------------

struct DecisionFlags {
  int64_t operation_id = 0;
  bool all = false;
  std::string reason;
  bool override = false;  // approve: override a soft deny (with a reason)
};

// The operations of `plan` the command line names: the one given by --operation-id, every
// one waiting for approval with --all, else the only one waiting.
Result<std::vector<Json>> chooseWaiting(Session& session, const std::string& plan, const DecisionFlags& flags) {
  if (flags.operation_id > 0) {
    TIDE_ASSIGN_OR_RETURN(Json operation, session.client.get(operationPath(flags.operation_id)));
    if (operation.value("plan", "") != plan) {
      return Status::invalidArgument("operation " + std::to_string(flags.operation_id) + " belongs to plan " +
                                     operation.value("plan", "") + ", not " + plan);
    }
    return std::vector<Json>{std::move(operation)};
  }
  TIDE_ASSIGN_OR_RETURN(
      Json list,
      session.client.getAll("/v1/operations",
                            {{"plan", plan}, {"state", model::toString(model::OperationState::kPendingApproval)}}));
  std::vector<Json> waiting = itemsOf(std::move(list));
  if (waiting.empty()) {
    TIDE_RETURN_IF_ERROR(session.client.get(planPath(plan)).status());  // an unknown plan says so
    return Status::notFound("no operation of plan " + plan + " is waiting for approval");
  }
  if (waiting.size() > 1 && !flags.all) {
    std::vector<ErrorDetail> details;
    for (const Json& operation : waiting) details.push_back({"", "operation " + describeOperation(operation), ""});
    return Status::invalidArgument(std::to_string(waiting.size()) + " operations of plan " + plan +
                                       " are waiting for approval; pass --operation-id ID or --all",
                                   std::move(details));
  }
  return waiting;
}

// POSTs /v1/operations/{id}/<action> for each chosen operation, naming the generation read
// so that an operation that changed since is refused rather than decided blind. Stops at
// the first refusal, after printing what was already done.
Status decideOperations(Session& session, const std::string& plan, const DecisionFlags& flags,
                        const std::string& action, const std::string& past) {
  TIDE_ASSIGN_OR_RETURN(std::vector<Json> chosen, chooseWaiting(session, plan, flags));
  Json decided = Json::array();
  Status refused;
  for (const Json& operation : chosen) {
    Json body = {{"generation", operation.value(Json::json_pointer("/metadata/generation"), int64_t{1})}};
    if (!flags.reason.empty()) body["reason"] = flags.reason;
    if (flags.override) body["override"] = true;
    Result<Json> reply = session.client.post(operationPath(operationIdOf(operation)) + "/" + action, body);
    if (!reply.isOk()) {
      refused = reply.status();
      break;
    }
    if (!session.json()) session.out << describeDecided(*reply, past) << '\n';
    decided.push_back(std::move(reply).value());
  }
  if (session.json() && (refused.isOk() || !decided.empty())) session.printJson(Json{{"items", decided}});
  return refused;
}

void addDecisionVerb(CLI::App& deployment, Verbs& verbs, const std::string& action, const std::string& past,
                     const std::string& description) {
  auto flags = std::make_shared<DecisionFlags>();
  CLI::App* verb = addNamedVerb(deployment, verbs, action + "-operation", description, "deployment plan name",
                                [flags, action, past](Session& session, const std::string& plan) {
                                  return decideOperations(session, plan, *flags, action, past);
                                });
  CLI::Option* id = verb->add_option("--operation-id", flags->operation_id,
                                     "the operation (default: the only one "
                                     "waiting for approval)")
                        ->check(positiveWholeNumber());
  verb->add_flag("--all", flags->all, "every operation of the plan that is waiting for approval")->excludes(id);
  if (action == "approve") {
    verb->add_option("--reason", flags->reason, "recorded with the decision (required with --override)");
    verb->add_flag("--override", flags->override, "override a soft deny (a hard deny cannot be overridden)");
  } else {
    verb->add_option("--reason", flags->reason, "recorded as the operation's message");
  }
}

// --- operate ----------------------------------------------------------------------------

struct OperateFlags {
  bool relocate = false, stop = false, restart = false, remove = false;
  std::string meta_instance;
  std::string reason;

  // REQUIRES: exactly one flag is set (the option group enforces it).
  model::OperationType type() const {
    if (relocate) return model::OperationType::kRelocate;
    if (stop) return model::OperationType::kStop;
    if (restart) return model::OperationType::kRestart;
    return model::OperationType::kDelete;
  }
};

bool isLive(const Json& instance) {
  std::string state = instance.value(Json::json_pointer("/meta_instance/state"), std::string());
  return !spells(state, model::MetaState::kDeleted) && !spells(state, model::MetaState::kMarkedForDeletion);
}

// The meta instance of `plan` to operate on: --meta-instance-name's, else the plan's only
// live one.
Result<std::string> chooseInstance(Session& session, const std::string& plan, const std::string& named) {
  if (!named.empty()) {
    TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(instancePath(named)));
    std::string owner = view.value(Json::json_pointer("/meta_instance/plan"), std::string());
    if (owner != plan)
      return Status::invalidArgument("instance " + named + " belongs to plan " + owner + ", not " + plan);
    return named;
  }
  TIDE_ASSIGN_OR_RETURN(Json list, session.client.getAll("/v1/instances", {{"plan", plan}}));
  std::vector<Json> live;
  for (Json& instance : itemsOf(std::move(list))) {
    if (isLive(instance)) live.push_back(std::move(instance));
  }
  if (live.size() == 1) return live.front().value(Json::json_pointer("/meta_instance/name"), std::string());
  if (live.empty()) {
    TIDE_RETURN_IF_ERROR(session.client.get(planPath(plan)).status());
    return Status::notFound("plan " + plan + " has no live meta instance");
  }
  std::vector<ErrorDetail> details;
  for (const Json& instance : live) {
    const Json& meta = instance["meta_instance"];
    details.push_back({"",
                       meta.value("name", "") + " (" + meta.value("state", "") + ", deployment " +
                           meta.value("deployment_id", "") + ")",
                       ""});
  }
  return Status::invalidArgument(
      "plan " + plan + " has " + std::to_string(live.size()) + " live meta instances; pass --meta-instance-name NAME",
      std::move(details));
}

void addOperateVerb(CLI::App& deployment, Verbs& verbs) {
  auto flags = std::make_shared<OperateFlags>();
  CLI::App* verb = addNamedVerb(
      deployment, verbs, "operate", "Ask for an operation on a meta instance of a plan", "deployment plan name",
      [flags](Session& session, const std::string& plan) -> Status {
        TIDE_ASSIGN_OR_RETURN(std::string instance, chooseInstance(session, plan, flags->meta_instance));
        Json body = {{"type", flags->type()}};
        if (!flags->reason.empty()) body["reason"] = flags->reason;
        TIDE_ASSIGN_OR_RETURN(Json operation, session.client.post(instancePath(instance) + "/operations", body));
        session.print(operation, [](std::ostream& out, const Json& operation) {
          out << "created operation " << describeOperation(operation) << ": " << operation.value("state", "") << '\n';
        });
        return Status::ok();
      });
  CLI::App* kind = verb->add_option_group("operation", "the operation (exactly one)");
  kind->add_flag("--relocate", flags->relocate, "move the instance to another node (make-before-break)");
  kind->add_flag("--stop", flags->stop, "stop the instance and release its resources");
  kind->add_flag("--restart", flags->restart, "restart the instance (places a stopped one again)");
  kind->add_flag("--delete", flags->remove, "delete the instance and its volumes");
  kind->require_option(1);
  verb->add_option("-x,--meta-instance-name", flags->meta_instance,
                   "the meta instance (default: the plan's only live one)");
  verb->add_option("--reason", flags->reason, "recorded as the operation's message");
}

// --- cancel -----------------------------------------------------------------------------

struct CancelFlags {
  int64_t operation_id = 0;
  std::string reason;
};

struct DecideByIdFlags {
  int64_t operation_id = 0;
  std::string reason;
  bool override = false;
};

void addDecideByIdVerb(CLI::App& operations, Verbs& verbs, const std::string& action, const std::string& past,
                       const std::string& description) {
  auto flags = std::make_shared<DecideByIdFlags>();
  CLI::App* verb = verbs.add(operations, action, description, [flags, action, past](Session& session) -> Status {
    Json body = Json::object();
    if (!flags->reason.empty()) body["reason"] = flags->reason;
    if (flags->override) body["override"] = true;
    TIDE_ASSIGN_OR_RETURN(Json operation, session.client.post(operationPath(flags->operation_id) + "/" + action, body));
    session.print(operation, [past](std::ostream& out, const Json& operation) {
      out << describeDecided(operation, past) << '\n';
    });
    return Status::ok();
  });
  verb->add_option("id", flags->operation_id, "the operation's ID")->required()->check(positiveWholeNumber());
  verb->add_option("--reason", flags->reason, "recorded with the decision (required with --override)");
  if (action == "approve") {
    verb->add_flag("--override", flags->override, "override a soft deny (a hard deny cannot be overridden)");
  }
}

}  // namespace

void addOperationDecisionVerbs(CLI::App& operations, Verbs& verbs) {
  addDecideByIdVerb(operations, verbs, "approve", "approved",
                    "Approve an operation waiting for approval (one of the approvals it needs)");
  addDecideByIdVerb(operations, verbs, "reject", "rejected", "Reject an operation waiting for approval");
}

void addOperationCancelVerb(CLI::App& operations, Verbs& verbs) {
  auto flags = std::make_shared<CancelFlags>();
  CLI::App* verb = verbs.add(
      operations, "cancel", "Cancel an operation that has not started running", [flags](Session& session) -> Status {
        Json body = Json::object();
        if (!flags->reason.empty()) body["reason"] = flags->reason;
        TIDE_ASSIGN_OR_RETURN(Json operation,
                              session.client.post(operationPath(flags->operation_id) + "/cancel", body));
        session.print(operation, [](std::ostream& out, const Json& operation) {
          out << "cancelled operation " << describeOperation(operation) << '\n';
        });
        return Status::ok();
      });
  verb->add_option("id", flags->operation_id, "the operation's ID")->required()->check(positiveWholeNumber());
  verb->add_option("--reason", flags->reason, "recorded as the operation's message");
}

void addOperationShowVerb(CLI::App& operations, Verbs& verbs) {
  auto id = std::make_shared<int64_t>(0);
  CLI::App* verb =
      verbs.add(operations, "show", "Show an operation with each policy's decision and the approvals given and needed",
                [id](Session& session) -> Status {
                  TIDE_ASSIGN_OR_RETURN(Json view, session.client.get(operationPath(*id)));
                  session.print(view, printOperationInfo);
                  return Status::ok();
                });
  verb->add_option("id", *id, "the operation's ID")->required()->check(positiveWholeNumber());
}

void addOperationVerbs(CLI::App& deployment, Verbs& verbs) {
  addDecisionVerb(deployment, verbs, "approve", "approved",
                  "Approve an operation of a plan that is waiting for approval");
  addDecisionVerb(deployment, verbs, "reject", "rejected",
                  "Reject an operation of a plan that is waiting for approval");
  addOperateVerb(deployment, verbs);
}

}  // namespace tide::cli
