#pragma once
// What differs between the databases the ledger can run on, in one place
// (docs/architecture.md#the-ledger). Every query in host/ledger/ is SQL that SQLite and
// PostgreSQL both accept, with named parameters (":name") that SOCI binds for either; what
// cannot be written that way — opening and setting up a connection, the schema's
// migrations, reading a field of a JSON column, learning which rows a transaction changed,
// readying a cached statement for its next use — is asked of the connection's SqlDialect.
// A database is added by implementing this class and naming its URL scheme in dialectFor(),
// not by editing queries.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/embedded.h"
#include "host/core/status.h"

namespace soci {
class session;
class statement;
}  // namespace soci

namespace tide::ledger {

// kReader connections refuse writes and are for file ledgers only.
enum class ConnectionRole { kWriter, kReader };

// (table, row id) of a row a connection inserted, updated or deleted.
using RowHook = std::function<void(const char* table, int64_t id)>;

class SqlDialect {
 public:
  virtual ~SqlDialect() = default;

  // The URL scheme the dialect serves: "sqlite" for "sqlite://PATH".
  virtual std::string_view scheme() const = 0;
  // OK when a ledger can run on it; otherwise why not (kUnavailable), for `tide serve` to say.
  virtual Status ledgerSupport() const = 0;
  // Opens `session` on `target` (the URL after "<scheme>://") for `role` and sets it up for
  // the ledger (foreign keys, durability, read-only for readers). Throws what SOCI throws.
  virtual void open(soci::session& session, const std::string& target, ConnectionRole role) const = 0;
  // True when `target` lives only in this process: no reader connections can share it.
  virtual bool inMemory(const std::string& target) const = 0;
  // The migrations that build the schema, in order (Db::migrate).
  virtual const std::vector<embedded::File>& migrations() const = 0;
  // The SQL of the string field `key` of JSON text column `column`, for a WHERE clause.
  virtual std::string jsonField(std::string_view column, std::string_view key) const = 0;
  // Makes `session` call `*hook` for every row it changes, as it happens (before commit).
  // False when the database cannot tell; then the ledger's change feed is off and readers
  // reload (Ledger::changesTracked). `hook` must outlive the session.
  virtual bool watchRowChanges(soci::session& session, RowHook* hook) const = 0;
  // True when no transaction is open on `session`.
  virtual bool autocommit(soci::session& session) const = 0;
  // Readies a cached statement, after SOCI's bind_clean_up(), for its next use with fresh
  // bindings: it must hold no read snapshot, no pending write and no pointer into the
  // previous use's values.
  virtual void resetStatement(soci::statement& statement) const = 0;
};

// SQLite through SOCI's sqlite3 backend: the embedded default.
const SqlDialect& sqliteDialect();
// PostgreSQL through SOCI's postgresql backend: connections open (libpq URIs), but a ledger
// cannot run on it yet (ledgerSupport says so).
const SqlDialect& postgresDialect();

// The dialect of database URL `url` ("sqlite://...", "postgresql://..."), and in `target` what
// follows its scheme; kInvalidArgument naming the schemes tide knows otherwise.
Result<const SqlDialect*> dialectFor(const std::string& url, std::string* target);

}  // namespace tide::ledger
