#pragma once
// The SOCI adapter: opening a database URL, applying migrations, and reading row values
// whatever column type the backend reports. Only host/ledger/ talks to SOCI; callers of
// the ledger never see a soci type or a soci exception.
//
// Not thread-safe: a Db is owned by the Ledger, which serializes access to each connection.

#include <functional>
#include <memory>
#include <string>

#include <soci/soci.h>

#include "host/core/clock.h"
#include "host/core/embedded.h"
#include "host/core/status.h"
#include "host/model/records.h"

namespace tide::ledger {

using model::Json;

enum class Dialect { kSqlite, kPostgres };

class Db {
 public:
  // kReader connections refuse writes (PRAGMA query_only) and are for file ledgers only.
  enum class Role { kWriter, kReader };
  // "sqlite://<path>" (":memory:" allowed) or "postgresql://..." (libpq connection URI).
  static Result<std::unique_ptr<Db>> open(const std::string& url, Role role = Role::kWriter);
  static bool isInMemory(const std::string& url);

  // Calls `hook` with (table, rowid) for every row this connection inserts, updates or
  // deletes, as it happens (before commit). False when the backend cannot tell.
  bool onRowChange(std::function<void(const char* table, int64_t id)> hook);

  soci::session& session() { return session_; }
  Dialect dialect() const { return dialect_; }

  // Applies every migration newer than the recorded schema_version, all in one
  // transaction, recording each in schema_version. Returns the version now in force.
  Result<int> migrate(const std::vector<embedded::File>& migrations, const std::string& now);

 private:
  Db() = default;
  soci::session session_;
  Dialect dialect_ = Dialect::kSqlite;
  std::function<void(const char*, int64_t)> row_hook_;
};

// Row accessors tolerant of the backend's type mapping (SQLite reports declared types,
// aggregates may come back as double or string). NULL reads as 0 / "" / null.
int64_t rowInt(const soci::row& r, std::size_t i);
double rowDouble(const soci::row& r, std::size_t i);
std::string rowString(const soci::row& r, std::size_t i);
Json rowJson(const soci::row& r, std::size_t i);  // parses a JSON text column

// Runs `fn`, turning any exception (soci_error, json errors, std::exception) into a
// Status whose message starts with `what`.
template <class Fn>
auto guarded(const char* what, Fn&& fn) -> decltype(fn());

Status statusFromException(const char* what, const std::exception& e);

template <class Fn>
auto guarded(const char* what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return statusFromException(what, e);
  } catch (...) {
    return Status::internal(std::string(what) + ": unknown error");
  }
}

}  // namespace tide::ledger
