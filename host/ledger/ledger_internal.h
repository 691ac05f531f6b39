#pragma once
// Private to host/ledger/: the transaction wrapper and the helpers the ledger_*.cpp files
// share. Nothing outside host/ledger/ (and its tests) includes this.

#include <soci/soci.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "host/ledger/db.h"
#include "host/ledger/ledger.h"
#include "host/ledger/ledger_core.h"
#include "host/model/transitions.h"

namespace tide::ledger {

// --- states in SQL ------------------------------------------------------------------------
// SQL text names no state: a query compares with bound parameters, spelled by model::toString.

// "(:<name>0, :<name>1, ...)": the placeholders of an IN list of `count` values.
std::string placeholderList(const std::string& name, std::size_t count);

// Binds each of `states` to the placeholders of placeholderList(name, size) in `values`, and
// returns that list: `"r.state NOT IN " + boundStates(values, "released", kReleasedRuntimeStates)`.
template <class States>
std::string boundStates(Bindings& values, const std::string& name, const States& states) {
  std::size_t i = 0;
  for (auto state : states) values.set(name + std::to_string(i++), model::toString(state));
  return placeholderList(name, i);
}

// The operation states that are not terminal (model::isUnfinished), in lifecycle order.
const std::vector<model::OperationState>& unfinishedOperationStates();

// The state or operation type a row holds in column `i`. Throws (guarded() turns it into an
// error naming the text) when the column holds a string that E does not have.
template <model::Vocabulary E>
E rowEnum(const soci::row& r, std::size_t i) {
  const std::string text = rowString(r, i);
  if (std::optional<E> value = model::parse<E>(text)) return *value;
  throw std::runtime_error("the ledger holds an unknown " + std::string(model::Spelling<E>::kWhat) + " '" + text + "'");
}

// --- the event chain (ledger_audit.cpp) ---------------------------------------------------

// sha256(prev_hash | seq | at | actor | kind | subject | data), hex: every event's `hash`.
std::string eventHash(const std::string& prev_hash, int64_t seq, const std::string& at, const std::string& actor,
                      const std::string& kind, const std::string& subject, const std::string& data);

// The events table's columns in Event's order, and a row of them as an Event.
extern const char* const kEventColumns;
Event eventFromRow(const soci::row& row);

// The newest event's seq and hash; after a prune that left no event, the newest
// checkpoint's; {0, ""} for an empty ledger.
ChainTail readChainTail(Db& db);

// The filters a list accepts: filter key → the column it compares. Equality, except for the
// keys "since" and "until", a time window over their column: `column >= since`, `column <
// until`, the values timestamps (checkFilters refuses others).
using FilterColumns = std::vector<std::pair<std::string, std::string>>;

// Builds "WHERE ..." clauses from validated filters with bound parameters.
class Where {
 public:
  explicit Where(std::string base) : clause_(std::move(base)) {}
  Where& eq(const std::string& column, const std::string& value);
  Where& greater(const std::string& column, int64_t value);
  // `column = value` for every filter of `options` that `columns` names; for the keys in
  // `lists`, whose values are comma-separated lists, `column IN (values)`; for "since" and
  // "until" the time window, the timestamps rewritten as formatTimestamp writes them so that
  // they compare as the stored ones do ("...T12:00:00Z" would sort after "...T12:00:00.500Z").
  // REQUIRES: checkFilters(options, columns) passed.
  Where& filters(const ListOptions& options, const FilterColumns& columns,
                 std::initializer_list<std::string_view> lists = {});
  // `expression IN (...)` with each of the comma-separated `values` bound.
  Where& in(const std::string& expression, std::string_view values);
  Where& raw(const std::string& condition) {
    add(condition);
    return *this;
  }
  const std::string& clause() const { return clause_; }
  Bindings& values() { return values_; }
  std::string bind(const std::string& value);  // returns the placeholder

 private:
  void add(const std::string& condition);
  std::string clause_;
  Bindings values_;
  int next_ = 0;
};

// The "col = :col, ..." list of an UPDATE that sets only some columns, with their values
// bound, for updateGuarded.
class Assignments {
 public:
  template <class T>
  void set(const char* column, const T& value) {
    if (!sql_.empty()) sql_ += ", ";
    sql_ += std::string(column) + " = :" + column;
    values_.set(column, value);
  }
  bool empty() const { return sql_.empty(); }
  const std::string& sql() const { return sql_; }
  Bindings& values() { return values_; }

 private:
  std::string sql_;
  Bindings values_;
};

// kInvalidArgument naming the first filter key not in `columns`, or a "since" or "until"
// that is not a timestamp.
Status checkFilters(const ListOptions& options, const FilterColumns& columns);
int64_t pageLimit(const ListOptions& options);

// The id a page of records continues after: a record's meta.id, or a plain row's id.
template <class T>
int64_t pageIdOf(const T& record) {
  if constexpr (requires { record.meta.id; }) {
    return record.meta.id;
  } else {
    return record.id;
  }
}

// One page of `where`'s rows in `order_column` order (the record id), mapped through
// `fromRow`; fetches one row more than the limit to know whether another page follows.
template <class T, class FromRow>
Page<T> fetchPage(Db& db, Where& where, const std::string& order_column, const ListOptions& options,
                  FromRow&& fromRow) {
  const int64_t limit = pageLimit(options);
  where.values().set("page_limit", static_cast<long long>(limit + 1));
  Page<T> page;
  db.forEachRow(
      where.clause() + " ORDER BY " + order_column + " LIMIT :page_limit",
      [&](const soci::row& row) { page.items.push_back(fromRow(row)); }, where.values());
  if (static_cast<int64_t>(page.items.size()) > limit) {
    page.items.pop_back();
    page.next_after = pageIdOf(page.items.back());
  }
  return page;
}

// The first row of `where` mapped through `fromRow`, or kNotFound with `not_found`.
template <class FromRow>
auto fetchOne(Db& db, Where& where, const std::string& not_found, FromRow&& fromRow)
    -> Result<decltype(fromRow(std::declval<const soci::row&>()))> {
  soci::row row;
  if (!db.run(where.clause(), soci::into(row), where.values())) return Status::notFound(not_found);
  return fromRow(row);
}

// Looks up a live record's id by name; 0 when there is none.
int64_t liveIdByName(Db& db, const char* table, const std::string& name);

// TokenRecords::mintersOf over `db` (inside a transaction, or a read).
std::vector<std::string> mintersOf(Db& db, const std::string& name);

// UPDATE of `table` row `id` guarded by `generation` (when given): bumps generation and
// updated_at. `assignments` is "col = :x, ..." bound from `values`. kConflict when the
// generation moved, kNotFound when the row is gone.
Status updateGuarded(Tx& tx, const char* table, int64_t id, Generation generation, const std::string& assignments,
                     Bindings& values);

// Validates `from` → `to` for E's record kind, then updates the row's state and message and
// appends a "<kind>.state" event for `subject`.
template <model::RecordState E>
Status changeState(Tx& tx, const char* table, int64_t id, const std::string& subject, E from, E to,
                   Generation generation, const std::string& message, Json extra = Json::object());

// What ends with an UPDATE that held a growth for its instance (OperationRecords::resizeForOperation)
// and ends in `state` other than SUCCEEDED, in its transaction: the runtime instance still
// holding the larger size goes back to the size it had. `target` is the operation's.
Status settleResize(Tx& tx, int64_t operation_id, const Json& target, OperationState state);

// The bodies of the create calls, shared with applyManifest so a whole manifest is one
// transaction. Each validates, inserts, and appends its ".created" event.
Result<Capability> insertCapability(Tx& tx, const Capability& capability);
Result<Cluster> insertCluster(Tx& tx, const Cluster& cluster);
// `warnings`, when given, receives what was accepted but deserves a look (capability names
// nobody declared: docs/mrds.md).
Result<Node> insertNode(Tx& tx, const Node& node, std::vector<ErrorDetail>* warnings = nullptr);
Result<Plan> insertPlan(Tx& tx, const Plan& plan, std::vector<ErrorDetail>* warnings = nullptr);
Result<Deployment> insertDeployment(Tx& tx, const Deployment& deployment);
// A DELETE (`operation`, its meta_instance set) for a plan teardown: the unfinished DELETE
// the meta instance already has, else a new one as createOperation writes it (and refuses).
Result<Operation> insertDeleteOnce(Tx& tx, const Operation& operation);
// A `kind` event ("plan.warning", "node.warning") {warnings: [{field, message}]} on
// `subject`, when there are any.
void appendWarnings(Tx& tx, const std::string& kind, const std::string& subject,
                    const std::vector<ErrorDetail>& warnings);

}  // namespace tide::ledger
