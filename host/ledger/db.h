#pragma once
// The SOCI adapter: opening a database URL, applying migrations, running queries on each
// connection's cache of prepared statements, and reading row values whatever column type
// the backend reports. Only host/ledger/ talks to SOCI; callers of
// the ledger never see a soci type or a soci exception.
//
// Not thread-safe: a Db is owned by the Ledger, which serializes access to each connection.

#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <soci/soci.h>

#include "host/core/clock.h"
#include "host/core/embedded.h"
#include "host/core/status.h"
#include "host/ledger/sql_dialect.h"
#include "host/model/records.h"

namespace tide::ledger {

using model::Json;

// Named parameters (":name" in the SQL) bound by value. Unlike soci::values, the values stay
// owned here, so a cached statement can take a fresh set on every use.
class Bindings {
 public:
  void set(const std::string& name, std::string value) { put(name, std::move(value)); }
  void set(const std::string& name, const char* value) { put(name, std::string(value)); }
  void set(const std::string& name, long long value) { put(name, value); }
  void set(const std::string& name, int value) { put(name, static_cast<long long>(value)); }
  void set(const std::string& name, double value) { put(name, value); }
  // Binds every value to `statement` by name. The values must outlive the statement's use.
  void exchangeInto(soci::statement& statement) const;

 private:
  using Value = std::variant<long long, double, std::string>;
  void put(const std::string& name, Value value);
  std::vector<std::pair<std::string, Value>> values_;
};

// The prepared statements of one connection, kept by SQL text and reused with fresh
// bindings, so a query is parsed once per connection instead of once per call. Bounded:
// the least recently used statement is finalized when a new one needs room. After every
// use a statement's bindings are dropped and, on SQLite, it is reset, so between uses it
// holds no read snapshot, no pending write and no pointer into the caller's values. A
// statement whose use threw is finalized rather than kept. (On PostgreSQL a statement is
// a named server-side one, deallocated when finalized; one finalized inside a transaction
// that failed cannot be, and stays allocated until its connection closes.) A query asked for while its cached statement
// is still in use (a nested query of the same text) gets a statement of its own. Not thread-safe: it belongs to its Db.
class StatementCache {
 private:
  struct Entry {
    std::string query;
    soci::statement statement;
    bool busy = false;
  };

 public:
  static constexpr std::size_t kCapacity = 128;
  StatementCache(soci::session& session, const SqlDialect& dialect) : session_(session), dialect_(dialect) {}
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  // The statement of one query for one use: bind with exchange(), execute, let go.
  class Lease {
   public:
    Lease(StatementCache& cache, const std::string& query);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    soci::statement& statement() { return own_ ? *own_ : entry_->statement; }

   private:
    StatementCache& cache_;
    std::list<Entry>::iterator entry_;
    std::optional<soci::statement> own_;  // when the cached one is busy (a nested use)
    int exceptions_ = std::uncaught_exceptions();
  };

  // Finalizes every statement (the schema changed). REQUIRES: no Lease is alive.
  void clear();
  std::size_t size() const { return entries_.size(); }
  int64_t prepares() const { return prepares_; }  // statements this cache prepared so far

 private:
  soci::statement prepare(const std::string& query);
  std::list<Entry>::iterator insert(const std::string& query);         // evicts the least recent when full
  void release(soci::statement& statement);                            // readies it for its next use
  std::list<Entry>::iterator erase(std::list<Entry>::iterator entry);  // the entry after it

  soci::session& session_;
  const SqlDialect& dialect_;
  std::list<Entry> entries_;                                                // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // keys view Entry::query
  int64_t prepares_ = 0;
};

class Db {
 public:
  using Role = ConnectionRole;
  // "sqlite://<path>" (":memory:" allowed) or "postgresql://..." (libpq connection URI).
  static Result<std::unique_ptr<Db>> open(const std::string& url, Role role = Role::kWriter);
  // True when the database of `url` lives only in this process (SqlDialect::inMemory).
  static bool isInMemory(const std::string& url);

  // Calls `hook` with (table, rowid) for every row this connection inserts, updates or
  // deletes, as it happens (before commit). False when the backend cannot tell.
  bool onRowChange(std::function<void(const char* table, int64_t id)> hook);

  // For one-off SQL (text that differs on every call); everything else goes through run()
  // and forEachRow(), which reuse this connection's prepared statements.
  soci::session& session() { return session_; }
  const SqlDialect& dialect() const { return dialect_; }
  // True when no transaction is open on this connection.
  bool autocommit();
  StatementCache& statements() { return statements_; }

  // Runs `query` once with `exchanges` (soci::use, soci::into, Bindings) bound in order,
  // on the cached statement for that text. True when a row was fetched into the intos.
  // Throws what SOCI throws.
  template <class... Exchanges>
  bool run(const std::string& query, Exchanges&&... exchanges);
  // Runs an UPDATE, INSERT or DELETE like run(); returns how many rows it changed.
  template <class... Uses>
  int64_t update(const std::string& query, Uses&&... uses);
  // Calls `each(const soci::row&)` for every row of `query` with `uses` bound.
  template <class Each, class... Uses>
  void forEachRow(const std::string& query, Each&& each, Uses&&... uses);

  // Applies every migration whose number (the digits its file name starts with, "008_...")
  // schema_version does not record yet, all in one transaction, recording each. Numbers must
  // increase along `migrations`. Returns the highest version now in force.
  Result<int> migrate(const std::vector<embedded::File>& migrations, const std::string& now);

 private:
  // Leases the cached statement of `query`, binds `exchanges` in order, and returns what
  // `use(statement)` returns.
  template <class Use, class... Exchanges>
  auto withStatement(const std::string& query, Use&& use, Exchanges&&... exchanges);

  explicit Db(const SqlDialect& dialect) : dialect_(dialect) {}
  soci::session session_;
  const SqlDialect& dialect_;
  RowHook row_hook_;
  StatementCache statements_{session_, dialect_};  // after session_: finalized before it closes
};

namespace detail {

template <class Exchange>
void exchange(soci::statement& statement, Exchange&& e) {
  statement.exchange(std::forward<Exchange>(e));
}
inline void exchange(soci::statement& statement, const Bindings& bindings) { bindings.exchangeInto(statement); }
inline void exchange(soci::statement& statement, Bindings& bindings) { bindings.exchangeInto(statement); }

}  // namespace detail

template <class Use, class... Exchanges>
auto Db::withStatement(const std::string& query, Use&& use, Exchanges&&... exchanges) {
  StatementCache::Lease lease(statements_, query);
  soci::statement& st = lease.statement();
  (detail::exchange(st, std::forward<Exchanges>(exchanges)), ...);
  st.define_and_bind();
  return use(st);
}

template <class... Exchanges>
bool Db::run(const std::string& query, Exchanges&&... exchanges) {
  return withStatement(
      query, [](soci::statement& st) { return st.execute(true); }, std::forward<Exchanges>(exchanges)...);
}

template <class... Uses>
int64_t Db::update(const std::string& query, Uses&&... uses) {
  return withStatement(
      query,
      [](soci::statement& st) -> int64_t {
        st.execute(true);
        return st.get_affected_rows();
      },
      std::forward<Uses>(uses)...);
}

template <class Each, class... Uses>
void Db::forEachRow(const std::string& query, Each&& each, Uses&&... uses) {
  soci::row row;  // outlives the lease, which unbinds it
  withStatement(
      query,
      [&](soci::statement& st) {
        if (!st.execute(true)) return;
        do {
          each(static_cast<const soci::row&>(row));
        } while (st.fetch());
      },
      soci::into(row), std::forward<Uses>(uses)...);
}

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
