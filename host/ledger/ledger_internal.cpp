#include "host/ledger/ledger_internal.h"

#include <algorithm>

namespace tide::ledger {

// --- shared helpers --------------------------------------------------------------------------

std::string Where::bind(const std::string& value) {
  const std::string name = "w" + std::to_string(next_++);
  values_.set(name, value);
  return ":" + name;
}

void Where::add(const std::string& condition) {
  clause_ += clause_.find(" WHERE ") == std::string::npos && clause_.rfind("WHERE ", 0) != 0 ? " WHERE " : " AND ";
  clause_ += condition;
}

Where& Where::eq(const std::string& column, const std::string& value) {
  add(column + " = " + bind(value));
  return *this;
}

Where& Where::greater(const std::string& column, int64_t value) {
  const std::string name = "w" + std::to_string(next_++);
  values_.set(name, static_cast<long long>(value));
  add(column + " > :" + name);
  return *this;
}

Where& Where::filters(const ListOptions& options, const FilterColumns& columns,
                      std::initializer_list<std::string_view> lists) {
  for (const auto& [key, column] : columns) {
    auto it = options.filters.find(key);
    if (it == options.filters.end()) continue;
    if (key == "since" || key == "until") {
      const Result<TimePoint> at = parseTimestamp(it->second);
      if (at.isOk()) add(column + (key == "since" ? " >= " : " < ") + bind(formatTimestamp(*at)));
    } else if (std::find(lists.begin(), lists.end(), key) == lists.end()) {
      eq(column, it->second);
    } else {
      in(column, it->second);
    }
  }
  return *this;
}

Where& Where::in(const std::string& expression, std::string_view values) {
  std::string placeholders;
  while (true) {
    const size_t comma = values.find(',');
    placeholders += (placeholders.empty() ? "" : ", ") + bind(std::string(values.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    values.remove_prefix(comma + 1);
  }
  add(expression + " IN (" + placeholders + ")");
  return *this;
}

Status checkFilters(const ListOptions& options, const FilterColumns& columns) {
  for (const auto& [key, value] : options.filters) {
    const std::string& name = key;  // clang's C++20 captures no structured binding
    const bool known_key = std::any_of(columns.begin(), columns.end(), [&](const auto& c) { return c.first == name; });
    if (!known_key) {
      std::string known;
      for (const auto& c : columns) known += (known.empty() ? "" : ", ") + c.first;
      return Status::invalidArgument("unknown filter '" + key + "'",
                                     {{key, "unknown filter; known: " + (known.empty() ? "none" : known), ""}});
    }
    if ((key == "since" || key == "until") && !parseTimestamp(value).isOk()) {
      const std::string problem = "must be a timestamp such as 2026-11-21T12:00:00Z, got '" + value + "'";
      return Status::invalidArgument("filter '" + key + "' " + problem, {{key, problem, ""}});
    }
  }
  return Status::ok();
}

int64_t pageLimit(const ListOptions& options) { return std::clamp<int64_t>(options.limit, 1, kMaxPageSize); }

int64_t liveIdByName(Db& db, const char* table, const std::string& name) {
  long long id = 0;
  soci::indicator ind = soci::i_null;
  const bool found = db.run("SELECT id FROM " + std::string(table) + " WHERE name = :name AND deleted_at IS NULL",
                            soci::use(name), soci::into(id, ind));
  return found && ind != soci::i_null ? id : 0;
}

Status updateGuarded(Tx& tx, const char* table, int64_t id, Generation generation, const std::string& assignments,
                     Bindings& values) {
  values.set("guard_id", static_cast<long long>(id));
  values.set("guard_now", tx.now());
  std::string query = "UPDATE " + std::string(table) + " SET " + assignments + (assignments.empty() ? "" : ", ") +
                      "generation = generation + 1, updated_at = :guard_now WHERE id = :guard_id";
  if (generation) {
    values.set("guard_generation", static_cast<long long>(*generation));
    query += " AND generation = :guard_generation";
  }
  if (tx.db().update(query, values) == 1) return Status::ok();
  long long current = 0;
  soci::indicator ind = soci::i_null;
  if (!tx.db().run("SELECT generation FROM " + std::string(table) + " WHERE id = :id",
                   soci::use(static_cast<long long>(id)), soci::into(current, ind))) {
    return Status::notFound(std::string(table) + " row " + std::to_string(id) + " is gone");
  }
  return Status::conflict("stale generation: you read " + std::to_string(generation.value_or(0)) +
                          ", the record is now at " + std::to_string(current));
}

template <model::RecordState E>
Status changeState(Tx& tx, const char* table, int64_t id, const std::string& subject, E from, E to,
                   Generation generation, const std::string& message, Json extra) {
  constexpr RecordKind kind = model::recordKindOf<E>();
  TIDE_RETURN_IF_ERROR(checkTransition(from, to).withPrefix(subject));
  Bindings values;
  values.set("state", model::toString(to));
  values.set("message", message);
  TIDE_RETURN_IF_ERROR(
      updateGuarded(tx, table, id, generation, "state = :state, message = :message", values).withPrefix(subject));
  extra["from"] = from;
  extra["to"] = to;
  if (!message.empty()) extra["message"] = message;
  tx.event(std::string(recordKindName(kind)) + ".state", subject, extra);
  return Status::ok();
}

#define TIDE_INSTANTIATE_CHANGE_STATE(E)                                                                  \
  template Status changeState<E>(Tx&, const char*, int64_t, const std::string&, E, E, Generation, \
                                 const std::string&, Json);
TIDE_INSTANTIATE_CHANGE_STATE(ClusterState)
TIDE_INSTANTIATE_CHANGE_STATE(NodeState)
TIDE_INSTANTIATE_CHANGE_STATE(PlanState)
TIDE_INSTANTIATE_CHANGE_STATE(DeploymentState)
TIDE_INSTANTIATE_CHANGE_STATE(MetaState)
TIDE_INSTANTIATE_CHANGE_STATE(RuntimeState)
TIDE_INSTANTIATE_CHANGE_STATE(OperationState)
#undef TIDE_INSTANTIATE_CHANGE_STATE

std::string placeholderList(const std::string& name, std::size_t count) {
  std::string out = "(";
  for (std::size_t i = 0; i < count; ++i) out += (i == 0 ? ":" : ", :") + name + std::to_string(i);
  return out + ")";
}

const std::vector<model::OperationState>& unfinishedOperationStates() {
  static const std::vector<model::OperationState> kUnfinished = [] {
    std::vector<model::OperationState> out;
    for (model::OperationState state : model::valuesOf<model::OperationState>()) {
      if (model::isUnfinished(state)) out.push_back(state);
    }
    return out;
  }();
  return kUnfinished;
}

}  // namespace tide::ledger
