#include "host/lua/policy/policy_data.h"

#include <algorithm>

#include "host/lua/runtime/time_zone.h"
#include "host/model/transitions.h"

namespace tide::lua {
namespace {

const char* const kFilterFields[] = {"plan", "namespace", "update_domain", "node", "type"};

std::string stringField(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool matchesFilter(const Json& op, const Json& filter) {
  for (const char* key : kFilterFields) {
    if (filter.contains(key) && stringField(op, key) != stringField(filter, key)) return false;
  }
  return true;
}

// The operation's state, nullopt when it has none that operations have.
std::optional<model::OperationState> stateOf(const Json& op) {
  return model::parse<model::OperationState>(stringField(op, "state"));
}

bool isInFlight(const Json& op, const Json&, TimePoint) {
  const std::optional<model::OperationState> state = stateOf(op);
  return state && model::isInFlight(*state);
}

bool matchesState(const Json& op, const Json& filter, TimePoint) {
  const std::string state = stringField(op, "state");
  auto wanted = filter.find("state");
  if (wanted == filter.end()) {
    const std::optional<model::OperationState> known = stateOf(op);
    return known && model::isUnfinished(*known);
  }
  if (wanted->is_string()) return state == wanted->get<std::string>();
  if (wanted->is_array()) return std::find(wanted->begin(), wanted->end(), Json(state)) != wanted->end();
  return false;
}

bool failedRecently(const Json& op, const Json& filter, TimePoint now) {
  if (stateOf(op) != model::OperationState::kFailed) return false;
  const std::string finished = stringField(op, "finished_at");
  if (finished.empty()) return true;
  auto at = parseTimestamp(finished);
  if (!at.isOk()) return false;
  int64_t seconds = 3600;
  if (auto it = filter.find("seconds"); it != filter.end() && it->is_number()) {
    seconds = it->get<int64_t>();
  }
  return *at >= now - std::chrono::seconds(seconds);
}

}  // namespace

SnapshotDataSource::SnapshotDataSource(Json fixture, const Clock& clock)
    : fixture_(fixture.is_object() ? std::move(fixture) : Json::object()), clock_(clock) {}

Result<int64_t> SnapshotDataSource::countOperations(const char* fixed_answer, const Json& filter,
                                                    bool (*state_matches)(const Json& op, const Json& filter,
                                                                          TimePoint now)) {
  if (auto it = fixture_.find(fixed_answer); it != fixture_.end()) {
    if (!it->is_number())
      return Status::invalidArgument(std::string("ctx fixture '") + fixed_answer + "' must be a number");
    return it->get<int64_t>();
  }
  int64_t n = 0;
  const TimePoint now = clock_.now();
  if (auto ops = fixture_.find("operations"); ops != fixture_.end() && ops->is_array()) {
    for (const Json& op : *ops) {
      if (matchesFilter(op, filter) && state_matches(op, filter, now)) ++n;
    }
  }
  return n;
}

Result<int64_t> SnapshotDataSource::inFlight(const Json& filter) {
  return countOperations("in_flight", filter, isInFlight);
}

Result<int64_t> SnapshotDataSource::count(const Json& filter) { return countOperations("count", filter, matchesState); }

Result<int64_t> SnapshotDataSource::recentFailures(const Json& filter) {
  return countOperations("recent_failures", filter, failedRecently);
}

Result<Json> SnapshotDataSource::instances(const std::string& plan) {
  auto all = fixture_.find("instances");
  if (all == fixture_.end() || !all->is_object()) return Json::array();
  auto it = all->find(plan);
  return it != all->end() && it->is_array() ? *it : Json::array();
}

Result<Json> SnapshotDataSource::node(const std::string& name) {
  auto nodes = fixture_.find("nodes");
  if (nodes == fixture_.end() || !nodes->is_object()) return Json(nullptr);
  auto it = nodes->find(name);
  return it != nodes->end() ? *it : Json(nullptr);
}

Result<TimePoint> fixtureNow(const Json& fixture, TimePoint fallback) {
  if (!fixture.is_object()) return fallback;
  auto it = fixture.find("now");
  if (it == fixture.end() || it->is_null()) return fallback;
  if (it->is_number()) return timeFromUnixSeconds(it->get<double>());
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    const size_t space = text.find(' ');
    if (space == std::string::npos) return parseTimestamp(text);
    Result<CivilTime> local = parseCivilTime(std::string_view(text).substr(0, space));
    if (!local.isOk()) return local.status();
    Result<int64_t> epoch = unixSecondsOfLocal(*local, std::string_view(text).substr(space + 1));
    if (!epoch.isOk()) return epoch.status();
    return TimePoint(std::chrono::seconds(*epoch));
  }
  return Status::invalidArgument(
      "ctx fixture 'now' must be a timestamp string (\"2026-03-03T10:00:00Z\", or a local time and a zone: "
      "\"2026-03-03T11:00:00 Europe/Berlin\") or epoch seconds");
}

}  // namespace tide::lua
