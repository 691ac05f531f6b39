#include "drivers/agent/agent_hub.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "drivers/process/state_store.h"
#include "host/core/durable_file.h"

namespace tide::drivers {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEpochFile = "epoch.json";
// How often a long poll looks at its `cancelled` predicate.
constexpr std::chrono::milliseconds kCancelCheck{200};

// Node names come from the ledger (names.h), but the hub also sees them in URLs: refuse any
// that would leave the dir.
bool usableAsFileName(const std::string& node) {
  return !node.empty() && node.front() != '.' && node.find('/') == std::string::npos;
}

// Keeps `entries` sorted by id; false when an equal entry was there already.
template <class Entry>
bool upsertById(std::vector<Entry>& entries, const Entry& entry, const std::string& (*id_of)(const Entry&),
                Json (*to_json)(const Entry&)) {
  auto it = std::lower_bound(entries.begin(), entries.end(), id_of(entry),
                             [&](const Entry& e, const std::string& id) { return id_of(e) < id; });
  if (it != entries.end() && id_of(*it) == id_of(entry)) {
    if (to_json(*it) == to_json(entry)) return false;
    *it = entry;
    return true;
  }
  entries.insert(it, entry);
  return true;
}

template <class Entry>
bool eraseById(std::vector<Entry>& entries, const std::string& id, const std::string& (*id_of)(const Entry&)) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return id_of(e) == id; });
  if (it == entries.end()) return false;
  entries.erase(it);
  return true;
}

const std::string& instanceId(const DesiredInstance& instance) { return instance.spec.id; }
const std::string& volumeId(const VolumeSpec& volume) { return volume.id; }

}  // namespace

Result<std::unique_ptr<AgentHub>> AgentHub::open(const std::string& dir, const Clock& clock, AgentHubOptions options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::internal("cannot create agent dir " + dir + ": " + ec.message());
  TIDE_ASSIGN_OR_RETURN(std::optional<Json> stored_epoch, readJsonFile((fs::path(dir) / kEpochFile).string()));
  int64_t epoch = 1;
  if (stored_epoch) {
    if (!stored_epoch->contains("epoch") || !(*stored_epoch)["epoch"].is_number_integer()) {
      return Status::internal("corrupt agent hub file " + (fs::path(dir) / kEpochFile).string() + ": no epoch");
    }
    epoch = (*stored_epoch)["epoch"].get<int64_t>() + 1;
  }
  TIDE_RETURN_IF_ERROR(writeFileDurably(fs::path(dir) / kEpochFile, Json{{"epoch", epoch}}.dump() + "\n"));

  std::unique_ptr<AgentHub> hub(new AgentHub(dir, clock, options, epoch));
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.extension() != ".json" || path.filename() == kEpochFile) continue;
    TIDE_ASSIGN_OR_RETURN(std::optional<Json> stored, readJsonFile(path.string()));
    Result<DesiredDocument> document = desiredFromJson(*stored);
    if (!document.isOk()) return document.status().withPrefix("agent hub file " + path.string());
    document->version.epoch = epoch;
    document->logs.clear();
    std::lock_guard<std::mutex> lock(hub->mu_);
    hub->nodeLocked(document->node).document = std::move(document).value();
  }
  if (ec) return Status::internal("cannot list agent dir " + dir + ": " + ec.message());
  return hub;
}

AgentHub::AgentHub(std::string dir, const Clock& clock, AgentHubOptions options, int64_t epoch)
    : dir_(std::move(dir)), clock_(clock), options_(options), epoch_(epoch), started_at_(clock.now()) {}

AgentHub::Node& AgentHub::nodeLocked(const std::string& node) const {
  std::unique_ptr<Node>& entry = nodes_[node];
  if (!entry) {
    entry = std::make_unique<Node>();
    entry->document.node = node;
    entry->document.version.epoch = epoch_;
  }
  return *entry;
}

DesiredDocument AgentHub::documentLocked(const Node& entry) const {
  DesiredDocument document = entry.document;
  for (const auto& [id, request] : entry.log_requests) {
    if (!request.text) document.logs.push_back(id);
  }
  return document;
}

void AgentHub::bumpLocked(Node& entry) {
  ++entry.document.version.revision;
  entry.changed.notify_all();
}

Result<DocumentVersion> AgentHub::change(const std::string& node, const std::string& instance_id,
                                         const std::function<bool(DesiredDocument&)>& edit) {
  if (!usableAsFileName(node)) {
    return Status::invalidArgument("bad node name '" + node + "'", {{"node", "not usable as a node name", node}});
  }
  Node* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    entry = &nodeLocked(node);
  }
  std::lock_guard<std::mutex> changing(entry->change_mu);
  DesiredDocument next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    next = entry->document;
  }
  if (!edit(next)) return next.version;
  ++next.version.revision;
  TIDE_RETURN_IF_ERROR(writeFileDurably(fs::path(dir_) / (node + ".json"), desiredToJson(next).dump(1) + "\n"));
  std::lock_guard<std::mutex> lock(mu_);
  // Log requests bump the revision without a file write; the installed one counts from the
  // newest of both.
  next.version.revision = std::max(next.version.revision, entry->document.version.revision + 1);
  entry->document = std::move(next);
  if (!instance_id.empty()) entry->changed_at[instance_id] = entry->document.version.revision;
  entry->changed.notify_all();
  return entry->document.version;
}

Result<DocumentVersion> AgentHub::setInstance(const DesiredInstance& instance) {
  return change(instance.spec.node, instance.spec.id, [&](DesiredDocument& document) {
    return upsertById(document.instances, instance, instanceId, desiredInstanceToJson);
  });
}

Result<DocumentVersion> AgentHub::removeInstance(const std::string& node, const std::string& id) {
  return change(node, id, [&](DesiredDocument& document) { return eraseById(document.instances, id, instanceId); });
}

Result<DocumentVersion> AgentHub::setVolume(const VolumeSpec& volume) {
  return change(volume.node, "", [&](DesiredDocument& document) {
    return upsertById(document.volumes, volume, volumeId, volumeToJson);
  });
}

Result<DocumentVersion> AgentHub::removeVolume(const std::string& node, const std::string& id) {
  return change(node, "", [&](DesiredDocument& document) { return eraseById(document.volumes, id, volumeId); });
}

std::optional<std::pair<DesiredInstance, int64_t>> AgentHub::desiredInstance(const std::string& node,
                                                                             const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  const Node& entry = *it->second;
  for (const DesiredInstance& instance : entry.document.instances) {
    if (instance.spec.id != id) continue;
    auto changed = entry.changed_at.find(id);
    return std::make_pair(instance, changed == entry.changed_at.end() ? int64_t{0} : changed->second);
  }
  return std::nullopt;
}

DesiredDocument AgentHub::document(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return documentLocked(nodeLocked(node));
}

DesiredDocument AgentHub::waitForDocument(const std::string& node, std::optional<DocumentVersion> known,
                                          std::chrono::milliseconds wait, const std::function<bool()>& cancelled) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::unique_lock<std::mutex> lock(mu_);
  Node& entry = nodeLocked(node);
  while (known && entry.document.version == *known && std::chrono::steady_clock::now() < deadline) {
    const auto slice = cancelled ? std::min(deadline, std::chrono::steady_clock::now() + kCancelCheck) : deadline;
    entry.changed.wait_until(lock, slice);
    if (cancelled) {
      lock.unlock();
      const bool stop = cancelled();
      lock.lock();
      if (stop) break;
    }
  }
  return documentLocked(entry);
}

DocumentVersion AgentHub::report(const std::string& node, AgentReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  Node& entry = nodeLocked(node);
  entry.last_report = std::move(report);
  entry.last_heartbeat = clock_.now();
  entry.changed.notify_all();
  return entry.document.version;
}

std::optional<AgentReport> AgentHub::lastReport(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  return it->second->last_report;
}

bool AgentHub::waitForReport(const std::string& node, int64_t revision,
                             const std::function<bool(const AgentReport&)>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  Node& entry = nodeLocked(node);
  return entry.changed.wait_until(lock, deadline, [&] {
    const std::optional<AgentReport>& last = entry.last_report;
    return last && last->epoch == epoch_ && last->applied_revision >= revision && done(*last);
  });
}

AgentNodeState AgentHub::nodeState(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  AgentNodeState state;
  auto it = nodes_.find(node);
  if (it != nodes_.end()) {
    state.last_heartbeat = it->second->last_heartbeat;
    if (it->second->last_report) {
      state.agent_version = it->second->last_report->agent_version;
      state.resources = it->second->last_report->resources;
    }
  }
  state.reachable = clock_.now() - state.last_heartbeat.value_or(started_at_) <= options_.heartbeat_ttl;
  return state;
}

std::optional<UnreachableNode> AgentHub::unreachable(const std::string& node) const {
  AgentNodeState state = nodeState(node);
  if (state.reachable) return std::nullopt;
  return UnreachableNode{node, state.last_heartbeat.value_or(started_at_)};
}

std::vector<std::string> AgentHub::nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, entry] : nodes_) out.push_back(name);
  return out;
}

Result<std::string> AgentHub::fetchLog(const std::string& node, const std::string& id, size_t max_bytes,
                                       std::chrono::milliseconds timeout) {
  if (unreachable(node)) return Status::unavailable("node " + node + " is UNREACHABLE: its agent cannot send logs");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  Node& entry = nodeLocked(node);
  LogRequest& request = entry.log_requests[id];
  if (++request.waiters == 1 && !request.text) bumpLocked(entry);
  const bool arrived = entry.changed.wait_until(lock, deadline, [&] { return request.text.has_value(); });
  std::optional<std::string> text = request.text;
  if (--request.waiters == 0) {
    entry.log_requests.erase(id);
    if (!arrived) bumpLocked(entry);  // the request leaves the document
  }
  if (!arrived) {
    return Status::unavailable("the agent of node " + node + " did not send the log of instance " + id + " within " +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                               " s");
  }
  if (text->size() > max_bytes) text->erase(0, text->size() - max_bytes);
  return *text;
}

void AgentHub::postLog(const std::string& node, const std::string& id, std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  Node& entry = nodeLocked(node);
  auto it = entry.log_requests.find(id);
  if (it == entry.log_requests.end() || it->second.text) return;
  it->second.text = std::move(text);
  // The request leaves the document now that it is answered.
  bumpLocked(entry);
}

}  // namespace tide::drivers
