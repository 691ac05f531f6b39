// `tide node ...`, `tide capability ...`, `tide cluster ...`: the machines tide places
// instances on, and what describes them.

#include <memory>

#include "host/cli/commands.h"
#include "host/cli/views.h"

namespace tide::cli {
namespace {

std::string nodePath(const std::string& name) { return "/v1/nodes/" + pathSegment(name); }

// cordon | uncordon | drain: POST /v1/nodes/{name}/<action>, which replies with the node.
void addNodeStateVerb(CLI::App& node, Verbs& verbs, const std::string& action, const std::string& description) {
  addNamedVerb(node, verbs, action, description, "node name",
               [action](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json reply, session.client.post(nodePath(name) + "/" + action));
                 session.print(reply, [&](std::ostream& out, const Json& node) {
                   out << "Node " << name << ": " << node.value("state", action) << '\n';
                 });
                 return Status::ok();
               });
}

// `delete NAME`: DELETE /v1/<collection>/<name> (admin). A refusal, such as a record still in
// use, is the server's, printed as it is.
void addDeleteRecordVerb(CLI::App& noun, Verbs& verbs, const std::string& collection, const std::string& kind) {
  addNamedVerb(noun, verbs, "delete", "Delete a " + noun.get_name(), noun.get_name() + " name",
               [collection, kind](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json reply, session.client.del("/v1/" + collection + "/" + pathSegment(name)));
                 session.print(reply,
                               [&](std::ostream& out, const Json&) { out << kind << " " << name << " deleted\n"; });
                 return Status::ok();
               });
}

// `show NAME`: GET /v1/<collection>/<name>, as the one row of the list's table.
void addShowRecordVerb(CLI::App& noun, Verbs& verbs, const std::string& collection, ListPrinter print) {
  addNamedVerb(noun, verbs, "show", "Show one " + noun.get_name(), noun.get_name() + " name",
               [collection, print](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json record, session.client.get("/v1/" + collection + "/" + pathSegment(name)));
                 session.print(record, [print](std::ostream& out, const Json& one) { print(out, Json::array({one})); });
                 return Status::ok();
               });
}

void addNodeCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* node = addNoun(app, "node", "Nodes: the machines instances run on");
  addCreateVerb(*node, verbs, "Create nodes (and anything else the manifest holds) from a manifest");
  addListVerb(*node, verbs, "nodes", printNodeTable);
  addNamedVerb(*node, verbs, "show", "Show one node", "node name",
               [](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json reply, session.client.get(nodePath(name)));
                 session.print(reply, printNodeInfo);
                 return Status::ok();
               });
  addNodeStateVerb(*node, verbs, "cordon", "Stop placing new instances on a node");
  addNodeStateVerb(*node, verbs, "uncordon", "Allow placing instances on a node again");
  addNodeStateVerb(*node, verbs, "drain", "Cordon a node and move its instances elsewhere");
  addDeleteRecordVerb(*node, verbs, "nodes", "Node");
}

}  // namespace

void addInventoryCommands(CLI::App& app, Verbs& verbs) {
  addNodeCommands(app, verbs);

  CLI::App* capability = addNoun(app, "capability", "Compute capabilities: what plans ask nodes to have");
  addCreateVerb(*capability, verbs, "Create compute capabilities from a manifest");
  addListVerb(*capability, verbs, "capabilities", printCapabilityTable);
  addShowRecordVerb(*capability, verbs, "capabilities", printCapabilityTable);
  addDeleteRecordVerb(*capability, verbs, "capabilities", "Capability");

  CLI::App* cluster = addNoun(app, "cluster", "Clusters: groups of nodes run by one driver");
  addCreateVerb(*cluster, verbs, "Create clusters from a manifest");
  addListVerb(*cluster, verbs, "clusters", printClusterTable);
  addShowRecordVerb(*cluster, verbs, "clusters", printClusterTable);
  addDeleteRecordVerb(*cluster, verbs, "clusters", "Cluster");
}

}  // namespace tide::cli
