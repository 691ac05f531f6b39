// API tokens (docs/architecture.md#authentication): only digests are stored, and who minted
// each token, so four eyes can follow a chain of minters.

#include "host/ledger/token_records.h"

#include "host/core/names.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {

// --- tokens ------------------------------------------------------------------------------------

namespace {

const char* kTokenSelect =
    "SELECT id, name, role, created_at, expires_at, revoked_at, revoked_by, node, created_by, namespaces FROM tokens";

// ApiToken::namespaces as the namespaces column holds them: comma-separated, NULL for none.
std::string joinNamespaces(const std::vector<std::string>& namespaces) {
  std::string out;
  for (const std::string& ns : namespaces) out += (out.empty() ? "" : ",") + ns;
  return out;
}

std::vector<std::string> splitNamespaces(const std::string& column) {
  std::vector<std::string> out;
  for (size_t start = 0; start < column.size();) {
    size_t comma = std::min(column.find(',', start), column.size());
    out.push_back(column.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

ApiToken tokenFromRow(const soci::row& r) {
  return ApiToken{rowInt(r, 0),    rowString(r, 1), rowString(r, 2), rowString(r, 3), rowString(r, 4),
                  rowString(r, 5), rowString(r, 6), rowString(r, 7), rowString(r, 8), splitNamespaces(rowString(r, 9))};
}

}  // namespace

// TokenRecords::mintersOf over one connection: breadth first up the created_by column, each name
// once (a name reused after a revocation brings the minters of every token that held it).
std::vector<std::string> mintersOf(Db& db, const std::string& name) {
  std::vector<std::string> out;
  std::vector<std::string> next = {name};
  while (!next.empty() && out.size() < TokenRecords::kMaxMinters) {
    std::vector<std::string> found;
    for (const std::string& minted : next) {
      db.forEachRow(
          "SELECT DISTINCT created_by FROM tokens WHERE name = :n AND created_by IS NOT NULL ORDER BY created_by",
          [&](const soci::row& r) {
            std::string minter = rowString(r, 0);
            if (minter == name || std::find(out.begin(), out.end(), minter) != out.end()) return;
            out.push_back(minter);
            found.push_back(std::move(minter));
          },
          soci::use(minted));
    }
    next = std::move(found);
  }
  return out;
}

Result<ApiToken> TokenRecords::createToken(const std::string& name, const std::string& token_sha256,
                                           const std::string& role, const std::string& actor,
                                           const std::string& expires_at, const std::string& node,
                                           const std::vector<std::string>& namespaces) {
  static const std::vector<std::string> kRoles = {"viewer", "operator", "approver", "admin", "agent"};
  if (std::string problem = nameProblem(name); !problem.empty()) {
    return Status::invalidArgument("token name '" + name + "': " + problem, {{"name", problem, ""}});
  }
  if (std::find(kRoles.begin(), kRoles.end(), role) == kRoles.end()) {
    return Status::invalidArgument("role '" + role + "' is not one of viewer, operator, approver, admin, agent",
                                   {{"role", "unknown role", ""}});
  }
  if (role == "agent" && node.empty()) {
    return Status::invalidArgument("an agent token needs the node its agent serves",
                                   {{"node", "is required for role agent", ""}});
  }
  if (role != "agent" && !node.empty()) {
    return Status::invalidArgument("only agent tokens are bound to a node; '" + role + "' tokens are not",
                                   {{"node", "only for role agent", node}});
  }
  if (std::string problem = model::tokenScopeProblem(role, namespaces); !problem.empty()) {
    return Status::invalidArgument(problem, {{"namespaces", problem, joinNamespaces(namespaces)}});
  }
  return write("create token", actor, [&](Tx& tx) -> Result<ApiToken> {
    if (!node.empty()) {
      long long nodes = 0;
      tx.db().run("SELECT COUNT(*) FROM nodes WHERE name = :n AND deleted_at IS NULL", soci::use(node),
                  soci::into(nodes));
      if (nodes == 0) return Status::notFound("node '" + node + "' not found");
    }
    long long live = 0;
    tx.db().run("SELECT COUNT(*) FROM tokens WHERE name = :n AND revoked_at IS NULL", soci::use(name),
                soci::into(live));
    if (live > 0) return Status::alreadyExists("a live token is already named '" + name + "'; revoke it first");
    long long id = 0;
    soci::indicator expiry = expires_at.empty() ? soci::i_null : soci::i_ok;
    soci::indicator bound = node.empty() ? soci::i_null : soci::i_ok;
    const std::string scope = joinNamespaces(namespaces);
    soci::indicator scoped = scope.empty() ? soci::i_null : soci::i_ok;
    tx.db().run(
        "INSERT INTO tokens (name, token_sha256, role, created_at, expires_at, node, created_by, namespaces) "
        "VALUES (:n, :s, :r, :c, :e, :nd, :by, :ns) RETURNING id",
        soci::use(name), soci::use(token_sha256), soci::use(role), soci::use(tx.now()), soci::use(expires_at, expiry),
        soci::use(node, bound), soci::use(actor), soci::use(scope, scoped), soci::into(id));
    Json data{{"role", role}};
    if (!expires_at.empty()) data["expires_at"] = expires_at;
    if (!node.empty()) data["node"] = node;
    if (!namespaces.empty()) data["namespaces"] = namespaces;
    tx.event("token.created", "token/" + name, data);
    return ApiToken{id, name, role, tx.now(), expires_at, "", "", node, actor, namespaces};
  });
}

Result<ApiToken> TokenRecords::findToken(const std::string& token_sha256) {
  TIDE_ASSIGN_OR_RETURN(
      ApiToken token, read("find token", [&](Db& db) -> Result<ApiToken> {
        soci::row r;
        if (!db.run(std::string(kTokenSelect) + " WHERE token_sha256 = :s", soci::use(token_sha256), soci::into(r))) {
          return Status::notFound("unknown token");
        }
        return tokenFromRow(r);
      }));
  if (!token.revoked_at.empty()) return Status::notFound("token '" + token.name + "' was revoked");
  // Timestamps share one fixed-width UTC format, so they compare as text.
  if (!token.expires_at.empty() && token.expires_at <= now()) {
    return Status::notFound("token '" + token.name + "' expired at " + token.expires_at);
  }
  return token;
}

Result<Page<ApiToken>> TokenRecords::listTokens(const ListOptions& options) {
  TIDE_RETURN_IF_ERROR(checkFilters(options, {}));
  return read("list tokens", [&](Db& db) -> Result<Page<ApiToken>> {
    Where where(kTokenSelect);
    where.greater("id", options.after);
    return fetchPage<ApiToken>(db, where, "id", options, tokenFromRow);
  });
}

Result<ApiToken> TokenRecords::revokeToken(const std::string& name, const std::string& actor, bool keep_an_admin) {
  return write("revoke token", actor, [&](Tx& tx) -> Result<ApiToken> {
    soci::row r;
    if (!tx.db().run(std::string(kTokenSelect) + " WHERE name = :n AND revoked_at IS NULL", soci::use(name),
                     soci::into(r))) {
      return Status::notFound("no live token is named '" + name + "'");
    }
    ApiToken token = tokenFromRow(r);
    if (keep_an_admin && token.role == "admin") {
      long long admins = 0;
      const std::string now = tx.now();
      tx.db().run(
          "SELECT COUNT(*) FROM tokens WHERE role = 'admin' AND revoked_at IS NULL AND id <> :id AND "
          "(expires_at IS NULL OR expires_at > :now)",
          soci::use(token.id), soci::use(now), soci::into(admins));
      if (admins == 0) {
        return Status::conflict("'" + name +
                                "' is the last admin token; create another admin token before revoking it");
      }
    }
    tx.db().run("UPDATE tokens SET revoked_at = :at, revoked_by = :by WHERE id = :id", soci::use(tx.now()),
                soci::use(actor), soci::use(token.id));
    tx.event("token.revoked", "token/" + name, Json{{"role", token.role}});
    token.revoked_at = tx.now();
    token.revoked_by = actor;
    return token;
  });
}

Result<std::vector<std::string>> TokenRecords::mintersOf(const std::string& name) {
  return read("find token minters",
              [&](Db& db) -> Result<std::vector<std::string>> { return ledger::mintersOf(db, name); });
}

int64_t TokenRecords::countTokens() {
  auto n = read("count tokens", [&](Db& db) -> Result<int64_t> {
    long long count = 0;
    db.run("SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL", soci::into(count));
    return count;
  });
  return n.isOk() ? *n : 0;
}

}  // namespace tide::ledger
