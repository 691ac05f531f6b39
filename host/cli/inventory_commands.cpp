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
  addNamedVerb(*node, verbs, "delete", "Delete a node", "node name",
               [](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json reply, session.client.del(nodePath(name)));
                 session.print(reply, [&](std::ostream& out, const Json&) { out << "Node " << name << " deleted\n"; });
                 return Status::ok();
               });
}

}  // namespace

void addInventoryCommands(CLI::App& app, Verbs& verbs) {
  addNodeCommands(app, verbs);

  CLI::App* capability = addNoun(app, "capability", "Compute capabilities: what plans ask nodes to have");
  addCreateVerb(*capability, verbs, "Create compute capabilities from a manifest");
  addListVerb(*capability, verbs, "capabilities", printCapabilityTable);

  CLI::App* cluster = addNoun(app, "cluster", "Clusters: groups of nodes run by one driver");
  addCreateVerb(*cluster, verbs, "Create clusters from a manifest");
  addListVerb(*cluster, verbs, "clusters", printClusterTable);
}

}  // namespace tide::cli
