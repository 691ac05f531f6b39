#include "host/ledger/sql_dialect.h"

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include <string>

namespace tide::ledger {
namespace {

class SqliteDialect final : public SqlDialect {
 public:
  std::string_view scheme() const override { return "sqlite"; }
  Status ledgerSupport() const override { return Status::ok(); }

  void open(soci::session& session, const std::string& target, ConnectionRole role) const override {
    session.open(soci::sqlite3, "db=" + target + " timeout=10");
    session << "PRAGMA foreign_keys = ON";
    session << "PRAGMA synchronous = FULL";
    if (!inMemory(target)) {
      std::string mode;
      session << "PRAGMA journal_mode = WAL", soci::into(mode);
    }
    if (role == ConnectionRole::kReader) session << "PRAGMA query_only = ON";
  }

  bool inMemory(const std::string& target) const override { return target == ":memory:"; }
  const std::vector<embedded::File>& migrations() const override { return embedded::sqliteMigrations(); }

  std::string jsonField(std::string_view column, std::string_view key) const override {
    return "json_extract(" + std::string(column) + ", '$." + std::string(key) + "')";
  }

  bool watchRowChanges(soci::session& session, RowHook* hook) const override {
    sqlite_api::sqlite3_update_hook(
        backend(session),
        [](void* hook, int, const char*, const char* table, sqlite_api::sqlite3_int64 id) {
          (*static_cast<RowHook*>(hook))(table, static_cast<int64_t>(id));
        },
        hook);
    return true;
  }

  bool autocommit(soci::session& session) const override {
    return sqlite_api::sqlite3_get_autocommit(backend(session)) != 0;
  }

  void resetStatement(soci::statement& statement) const override {
    // SOCI's SQLite backend leaves a statement where its last step left it: holding the
    // read snapshot of a SELECT that was not read to the end, or an unfinished INSERT ...
    // RETURNING that would block COMMIT. It also keeps the previous use's bindings (which
    // point into the caller's strings) and binding mode. Start the next use afresh.
    auto* sqlite = static_cast<soci::sqlite3_statement_backend*>(statement.get_backend());
    sqlite_api::sqlite3_reset(sqlite->stmt_);
    sqlite_api::sqlite3_clear_bindings(sqlite->stmt_);
    sqlite->useData_.clear();
    sqlite->boundByName_ = false;
    sqlite->boundByPos_ = false;
    sqlite->rowsAffectedBulk_ = -1;
  }

 private:
  static sqlite_api::sqlite3* backend(soci::session& session) {
    return static_cast<soci::sqlite3_session_backend*>(session.get_backend())->conn_;
  }
};

// Connections open, so `tide doctor` and the tests can reach a server; the schema's
// migrations, the change feed and the ledger's use are issue "Scale out"'s to add.
class PostgresDialect final : public SqlDialect {
 public:
  std::string_view scheme() const override { return "postgresql"; }
  Status ledgerSupport() const override {
    return Status::unavailable("database: PostgreSQL ledgers are not supported yet (use sqlite://)");
  }
  void open(soci::session& session, const std::string& target, ConnectionRole) const override {
    session.open(soci::postgresql, "postgresql://" + target);
  }
  bool inMemory(const std::string&) const override { return false; }
  const std::vector<embedded::File>& migrations() const override {
    static const std::vector<embedded::File> none;
    return none;
  }
  std::string jsonField(std::string_view column, std::string_view key) const override {
    return "(" + std::string(column) + "::jsonb ->> '" + std::string(key) + "')";
  }
  bool watchRowChanges(soci::session&, RowHook*) const override { return false; }
  bool autocommit(soci::session&) const override { return true; }  // the ledger opens no PostgreSQL transaction yet
  void resetStatement(soci::statement&) const override {}  // a named server-side statement keeps no state between uses
};

}  // namespace

const SqlDialect& sqliteDialect() {
  static const SqliteDialect dialect;
  return dialect;
}

const SqlDialect& postgresDialect() {
  static const PostgresDialect dialect;
  return dialect;
}

Result<const SqlDialect*> dialectFor(const std::string& url, std::string* target) {
  for (const SqlDialect* dialect : {&sqliteDialect(), &postgresDialect()}) {
    const std::string prefix = std::string(dialect->scheme()) + "://";
    if (url.rfind(prefix, 0) == 0) {
      *target = url.substr(prefix.size());
      return dialect;
    }
  }
  return Status::invalidArgument("database: '" + url + "' must start with sqlite:// or postgresql://");
}

}  // namespace tide::ledger
