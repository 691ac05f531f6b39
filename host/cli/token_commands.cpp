// `tide token create|list|revoke`: the API tokens an admin issues (docs/api.md#tokens). The
// secret is printed once, by `create`; the host keeps only its sha256.

#include <memory>

#include "host/cli/commands.h"
#include "host/cli/joined.h"
#include "host/cli/json_fields.h"
#include "host/cli/table.h"

namespace tide::cli {
namespace {

struct CreateFlags {
  std::string name;
  std::string positional_name;
  std::string role;
  std::string expires;
  std::string node;
  std::vector<std::string> namespaces;
};

std::string orNever(const Json& token, const char* key, const char* none) {
  const std::string value = token.value(key, "");
  return value.empty() ? none : value;
}

// "prod, staging", or "*" for a token that acts in every namespace.
std::string namespacesText(const Json& token) {
  const std::string out = joined(items(at(token, {"namespaces"})), ", ", [](const Json& ns) { return text(ns); });
  return out.empty() ? "*" : out;
}

void printTokenTable(std::ostream& out, const Json& items) {
  Table table({"Name", "Role", "Namespaces", "Node", "Source", "State", "Created At", "Created By", "Expires At",
               "Revoked At", "Revoked By"});
  for (const Json& t : items) {
    table.addRow({t.value("name", ""), t.value("role", ""), namespacesText(t), t.value("node", ""),
                  t.value("source", ""), t.value("state", ""), t.value("created_at", ""), t.value("created_by", ""),
                  orNever(t, "expires_at", "never"), t.value("revoked_at", ""), t.value("revoked_by", "")});
  }
  table.print(out);  // with its "Total: N" line
}

void printIssued(std::ostream& out, const Json& token) {
  const std::string scope = namespacesText(token);
  out << "Token " << token.value("name", "") << " (" << token.value("role", "")
      << (scope == "*" ? "" : " in namespaces " + scope) << ", expires " << orNever(token, "expires_at", "never")
      << "):\n"
      << token.value("token", "") << "\n"
      << "Store it now: tide keeps only its digest and cannot show it again.\n";
}

}  // namespace

void addTokenCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* token = addNoun(app, "token", "API tokens: create, list and revoke them (admin)");

  auto flags = std::make_shared<CreateFlags>();
  CLI::App* create = verbs.add(*token, "create", "Create a token and print its secret once", [flags](Session& session) {
    if (flags->name.empty() == flags->positional_name.empty()) {
      return Status::invalidArgument("name the token once: tide token create NAME or --name NAME",
                                     {{"name", "give it as NAME or --name, not both", ""}});
    }
    Json body = {{"name", flags->name.empty() ? flags->positional_name : flags->name}, {"role", flags->role}};
    if (!flags->expires.empty()) body["expires_in"] = flags->expires;
    if (!flags->node.empty()) body["node"] = flags->node;
    if (!flags->namespaces.empty()) body["namespaces"] = flags->namespaces;
    TIDE_ASSIGN_OR_RETURN(Json reply, session.client.post("/v1/tokens", body));
    session.print(reply, printIssued);
    return Status::ok();
  });
  create->add_option("name", flags->positional_name, "the token's name, as events and approvals show it");
  create->add_option("--name", flags->name, "the token's name (instead of NAME)");
  create->add_option("--role", flags->role, "viewer, operator, approver, admin, or agent (with --node)")->required();
  create->add_option("--node", flags->node, "for role agent: the node whose agent uses the token");
  create->add_option("--namespace", flags->namespaces,
                     "act only in this namespace (repeat for more); reads stay fleet-wide (default: every namespace)");
  create->add_option("--expires", flags->expires, "lifetime such as 90m, 12h or 30d (default: never)");

  addListVerb(*token, verbs, "tokens", printTokenTable);

  addNamedVerb(*token, verbs, "revoke", "Revoke a token; requests with it fail from now on", "token name",
               [](Session& session, const std::string& name) -> Status {
                 TIDE_ASSIGN_OR_RETURN(Json reply, session.client.del("/v1/tokens/" + pathSegment(name)));
                 session.print(reply, [&](std::ostream& out, const Json&) { out << "Token " << name << " revoked\n"; });
                 return Status::ok();
               });
}

}  // namespace tide::cli
