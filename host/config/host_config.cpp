#include "host/config/host_config.h"

#include <set>

#include "host/config/field_reader.h"
#include "host/config/yaml_tree.h"
#include "host/model/records.h"

namespace tide::config {
namespace {

using Kind = YamlNode::Kind;

const KeyTable kHostKeys = {
    {"listen", {"listen"}},
    {"data_dir", {"data_dir"}},
    {"database", {"database"}},
    {"policies_dir", {"policies_dir"}},
    {"scripts_dir", {"scripts_dir"}},
    {"auth", {"auth"}},
    {"process", {"process"}},
    {"limits", {"limits"}},
    {"tls", {"tls"}},
    {"default_verdict", {"default_verdict"}},
    {"retention", {"retention"}},
    {"agents", {"agents"}},
    {"analysis", {"analysis"}},
    {"traffic", {"traffic"}},
    {"notifications", {"notifications"}},
};

const KeyTable kNotificationsKeys = {{"webhooks", {"webhooks"}}};

const KeyTable kWebhookKeys = {
    {"name", {"name"}},
    {"url", {"url"}},
    {"events", {"events"}},
    {"timeout_ms", {"timeout_ms"}},
    {"max_attempts", {"max_attempts"}},
    {"backoff_initial_ms", {"backoff_initial_ms"}},
    {"backoff_max_ms", {"backoff_max_ms"}},
};

const KeyTable kAnalysisKeys = {{"providers", {"providers"}}};

const KeyTable kMetricProviderKeys = {
    {"type", {"type"}},
    {"url", {"url"}},
    {"timeout_ms", {"timeout_ms"}},
    {"json_path", {"json_path"}},
};

const KeyTable kAgentsKeys = {
    {"heartbeat_ttl_s", {"heartbeat_ttl_s"}},
    {"replace_after_s", {"replace_after_s"}},
    {"max_unreachable_share", {"max_unreachable_share"}},
    {"partition_window_s", {"partition_window_s"}},
    {"max_long_polls", {"max_long_polls"}},
};

const KeyTable kRetentionKeys = {
    {"events_max_age_days", {"events_max_age_days"}},
    {"events_max_count", {"events_max_count"}},
    {"decisions_max_age_days", {"decisions_max_age_days"}},
    {"script_versions_keep", {"script_versions_keep"}},
    {"batch", {"batch"}},
    {"interval_minutes", {"interval_minutes"}},
};

const KeyTable kTlsKeys = {{"cert", {"cert"}}, {"key", {"key"}}};

const KeyTable kAuthKeys = {
    {"enabled", {"enabled"}},
    {"tokens", {"tokens"}},
    {"approver_must_differ", {"approver_must_differ"}},
};

const KeyTable kTokenKeys = {
    {"name", {"name"}}, {"token", {"token"}}, {"role", {"role"}}, {"namespaces", {"namespaces"}}};

const KeyTable kProcessKeys = {
    {"port_range_start", {"port_range_start"}},
    {"port_range_end", {"port_range_end"}},
    {"volume_root", {"volume_root"}},
    {"image_catalog", {"image_catalog"}},
    {"run_as", {"run_as"}},
    {"command_allow", {"command_allow"}},
    {"log_max_bytes", {"log_max_bytes"}},
    {"log_retention_hours", {"log_retention_hours"}},
};

const KeyTable kLimitsKeys = {
    {"lua_deadline_ms", {"lua_deadline_ms"}},
    {"lua_memory_mib", {"lua_memory_mib"}},
    {"max_body_bytes", {"max_body_bytes"}},
    {"reconcile_interval_ms", {"reconcile_interval_ms"}},
    {"executor_workers", {"executor_workers"}},
    {"executor_chunk", {"executor_chunk"}},
    {"approval_chunk", {"approval_chunk"}},
    {"executor_rate_per_second", {"executor_rate_per_second"}},
    {"discrepancy_threshold", {"discrepancy_threshold"}},
    {"orphan_grace_s", {"orphan_grace_s"}},
    {"operation_deadline_s", {"operation_deadline_s"}},
    {"max_attempts", {"max_attempts"}},
    {"max_connections", {"max_connections"}},
    {"request_read_deadline_s", {"request_read_deadline_s"}},
    {"max_header_bytes", {"max_header_bytes"}},
    {"max_headers", {"max_headers"}},
    {"max_json_depth", {"max_json_depth"}},
};

constexpr size_t kMinTokenLength = 16;
constexpr int64_t kMinEventsKept = 10;
const std::set<std::string> kRoles = {"viewer", "operator", "approver", "admin"};

void readNonEmptyString(MapReader& m, std::string_view key, std::string& out) {
  auto v = m.string(key, Need::kOptional);
  if (!v) return;
  if (v->empty())
    m.problems().add(*m.get(key), m.field(key), "must not be empty");
  else
    out = *v;
}

void readInt(MapReader& m, std::string_view key, Bounds bounds, int& out) {
  if (auto v = m.integer(key, Need::kOptional, bounds)) out = static_cast<int>(*v);
}

// "host:port" or "[v6]:port"; port 0 asks the OS for a free one.
void readListen(MapReader& m, std::string& out) {
  auto v = m.string("listen", Need::kOptional);
  if (!v) return;
  size_t colon = v->rfind(':');
  std::string host = colon == std::string::npos ? "" : v->substr(0, colon);
  std::string port = colon == std::string::npos ? "" : v->substr(colon + 1);
  bool portOk = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
                std::stoi(port) <= 65535;
  if (host.empty() || !portOk) {
    m.problems().add(*m.get("listen"), m.field("listen"),
                     "\"" + *v + "\" must be host:port with a port between 0 and 65535");
    return;
  }
  out = *v;
}

void readDatabase(MapReader& m, std::string& out) {
  auto v = m.string("database", Need::kOptional);
  if (!v) return;
  for (std::string_view scheme : {"sqlite://", "postgresql://"}) {
    if (v->starts_with(scheme) && v->size() > scheme.size()) {
      out = *v;
      return;
    }
  }
  m.problems().add(*m.get("database"), m.field("database"), "must be sqlite://<path> or postgresql://<connection>");
}

void readAuth(const YamlNode& node, const std::string& path, HostConfig::Auth& out, Problems& problems) {
  MapReader m(node, path, kAuthKeys, problems);
  if (auto v = m.boolean("enabled", Need::kOptional)) out.enabled = *v;
  if (auto v = m.boolean("approver_must_differ", Need::kOptional)) out.approver_must_differ = *v;
  const YamlNode* tokens = m.sequence("tokens", Need::kOptional);
  if (tokens == nullptr) return;
  std::set<std::string> names, secrets;
  for (size_t i = 0; i < tokens->items.size(); ++i) {
    MapReader t(tokens->items[i], indexPath(m.field("tokens"), i), kTokenKeys, problems);
    TokenConfig token;
    if (auto v = t.name("name", Need::kRequired)) {
      token.name = *v;
      if (!names.insert(*v).second) problems.add(*t.get("name"), t.field("name"), "token name given twice");
    }
    if (auto v = t.string("token", Need::kRequired)) {
      token.token = *v;
      // Never echo a secret into an error message.
      if (v->size() < kMinTokenLength) {
        problems.add(*t.get("token"), t.field("token"),
                     "must be at least " + std::to_string(kMinTokenLength) + " characters");
      } else if (!secrets.insert(*v).second) {
        problems.add(*t.get("token"), t.field("token"), "the same token is given to two names");
      }
    }
    if (auto v = t.string("role", Need::kRequired)) {
      token.role = *v;
      if (!kRoles.contains(*v)) {
        problems.add(*t.get("role"), t.field("role"),
                     "unknown role \"" + *v + "\"; expected viewer, operator, approver or admin");
      }
    }
    if (auto v = t.stringList("namespaces", Need::kOptional)) {
      token.namespaces = *v;
      if (std::string problem = model::tokenScopeProblem(token.role, *v); !problem.empty()) {
        problems.add(*t.get("namespaces"), t.field("namespaces"), problem);
      }
    }
    out.tokens.push_back(std::move(token));
  }
}

void readImageCatalog(const YamlNode& node, const std::string& path, ImageCatalog& out, Problems& problems) {
  if (!expectKind(node, Kind::kMapping, path, problems)) return;
  out.clear();
  std::set<std::string> patterns;
  for (const auto& [key, value] : node.entries) {
    auto pattern = readString(key, path, problems);
    if (!pattern) continue;
    std::string field = childPath(path, *pattern);
    if (pattern->empty()) {
      problems.add(key, field, "image pattern must not be empty");
      continue;
    }
    if (!patterns.insert(*pattern).second) {
      problems.add(key, field, "image pattern given twice");
      continue;
    }
    auto argv = readStringList(value, field, problems);
    if (!argv) continue;
    if (argv->empty()) {
      problems.add(value, field, "must hold at least the program to run");
      continue;
    }
    out.emplace_back(*pattern, std::move(*argv));
  }
}

void readProcess(const YamlNode& node, const std::string& path, HostConfig::Process& out, Problems& problems) {
  MapReader m(node, path, kProcessKeys, problems);
  constexpr Bounds kPortRange{1024, 65535};
  size_t before = problems.count();
  readInt(m, "port_range_start", kPortRange, out.port_range_start);
  readInt(m, "port_range_end", kPortRange, out.port_range_end);
  if (problems.count() == before && out.port_range_start >= out.port_range_end) {
    std::string_view key = m.get("port_range_end") != nullptr ? "port_range_end" : "port_range_start";
    problems.add(*m.get(key), m.field(key),
                 "port_range_start (" + std::to_string(out.port_range_start) + ") must be below port_range_end (" +
                     std::to_string(out.port_range_end) + ")");
  }
  readNonEmptyString(m, "volume_root", out.volume_root);
  if (const YamlNode* v = m.get("image_catalog"))
    readImageCatalog(*v, m.field("image_catalog"), out.image_catalog, problems);
  readNonEmptyString(m, "run_as", out.run_as);
  if (auto patterns = m.stringList("command_allow", Need::kOptional)) {
    for (size_t i = 0; i < patterns->size(); ++i) {
      if ((*patterns)[i].empty()) {
        problems.add(*m.get("command_allow"), indexPath(m.field("command_allow"), i), "must not be empty");
      }
    }
    out.command_allow = std::move(*patterns);
  }
  if (auto v = m.integer("log_max_bytes", Need::kOptional, {4096, 1LL << 40})) out.log_max_bytes = static_cast<size_t>(*v);
  readInt(m, "log_retention_hours", {0, 87'600}, out.log_retention_hours);
}

void readLimits(const YamlNode& node, const std::string& path, HostConfig::Limits& out, Problems& problems) {
  MapReader m(node, path, kLimitsKeys, problems);
  readInt(m, "lua_deadline_ms", {1, 60'000}, out.lua_deadline_ms);
  readInt(m, "lua_memory_mib", {1, 4096}, out.lua_memory_mib);
  if (auto v = m.integer("max_body_bytes", Need::kOptional, {1024, 1 << 30}))
    out.max_body_bytes = static_cast<size_t>(*v);
  readInt(m, "reconcile_interval_ms", {10, 600'000}, out.reconcile_interval_ms);
  readInt(m, "executor_workers", {1, 256}, out.executor_workers);
  readInt(m, "executor_chunk", {1, 10'000}, out.executor_chunk);
  readInt(m, "approval_chunk", {1, 100'000}, out.approval_chunk);
  readInt(m, "executor_rate_per_second", {1, 10'000}, out.executor_rate_per_second);
  readInt(m, "operation_deadline_s", {1, 86'400}, out.operation_deadline_s);
  readInt(m, "max_attempts", {1, 100}, out.max_attempts);
  readInt(m, "discrepancy_threshold", {0, 1'000'000}, out.discrepancy_threshold);
  readInt(m, "orphan_grace_s", {0, 30 * 86'400}, out.orphan_grace_s);
  readInt(m, "max_connections", {1, 4096}, out.max_connections);
  readInt(m, "request_read_deadline_s", {1, 3600}, out.request_read_deadline_s);
  readInt(m, "max_header_bytes", {1024, 1 << 20}, out.max_header_bytes);
  readInt(m, "max_headers", {8, 10'000}, out.max_headers);
  readInt(m, "max_json_depth", {8, 512}, out.max_json_depth);
}

void readTls(const YamlNode& node, const std::string& path, HostConfig::Tls& out, Problems& problems) {
  MapReader m(node, path, kTlsKeys, problems);
  readNonEmptyString(m, "cert", out.cert);
  readNonEmptyString(m, "key", out.key);
  if (out.cert.empty() != out.key.empty()) {
    std::string_view given = out.cert.empty() ? "key" : "cert";
    problems.add(*m.get(given), m.field(given), "tls.cert and tls.key must be given together");
  }
}

// 0 turns a rule off; a rule that is on keeps at least a few of its records, so a typo cannot
// prune everything.
void readRetention(const YamlNode& node, const std::string& path, model::RetentionPolicy& out, Problems& problems) {
  MapReader m(node, path, kRetentionKeys, problems);
  constexpr Bounds kDays{0, 36'500};
  readInt(m, "events_max_age_days", kDays, out.events_max_age_days);
  if (auto v = m.integer("events_max_count", Need::kOptional, {0, 1LL << 40})) {
    if (*v != 0 && *v < kMinEventsKept) {
      problems.add(*m.get("events_max_count"), m.field("events_max_count"),
                   "must be 0 (off) or at least " + std::to_string(kMinEventsKept));
    } else {
      out.events_max_count = *v;
    }
  }
  readInt(m, "decisions_max_age_days", kDays, out.decisions_max_age_days);
  readInt(m, "script_versions_keep", {0, 1'000'000}, out.script_versions_keep);
  if (auto v = m.integer("batch", Need::kOptional, {100, 100'000})) out.batch = *v;
  readInt(m, "interval_minutes", {1, 10'080}, out.interval_minutes);
}

void readAgents(const YamlNode& node, const std::string& path, HostConfig::Agents& out, Problems& problems) {
  MapReader m(node, path, kAgentsKeys, problems);
  readInt(m, "heartbeat_ttl_s", {1, 3600}, out.heartbeat_ttl_s);
  readInt(m, "replace_after_s", {0, 30 * 86'400}, out.replace_after_s);
  if (auto v = m.number("max_unreachable_share", Need::kOptional, {0, 1})) out.max_unreachable_share = *v;
  readInt(m, "partition_window_s", {1, 86'400}, out.partition_window_s);
  readInt(m, "max_long_polls", {0, 10'000}, out.max_long_polls);
}

void readMetricProvider(const YamlNode& node, const std::string& path, model::MetricProvider& out,
                        Problems& problems) {
  MapReader m(node, path, kMetricProviderKeys, problems);
  if (auto type = m.string("type", Need::kRequired)) {
    if (*type == "prometheus" || *type == "http") {
      out.type = *type;
    } else {
      problems.add(*m.get("type"), m.field("type"), "unknown provider type \"" + *type + "\"; expected prometheus or http");
    }
  }
  if (auto url = m.string("url", Need::kRequired)) {
    if (url->rfind("http://", 0) == 0 || url->rfind("https://", 0) == 0) {
      out.url = *url;
    } else {
      problems.add(*m.get("url"), m.field("url"), "must start with http:// or https://");
    }
  }
  readInt(m, "timeout_ms", {1, 60'000}, out.timeout_ms);
  if (auto v = m.string("json_path", Need::kOptional)) out.json_path = *v;
  if (out.type == "http" && out.json_path.empty()) {
    problems.add(node, m.field("json_path"), "an http provider needs json_path (where its number is in the answer)");
  }
}

void readAnalysis(const YamlNode& node, const std::string& path, HostConfig::Analysis& out, Problems& problems) {
  MapReader m(node, path, kAnalysisKeys, problems);
  const YamlNode* providers = m.mapping("providers", Need::kOptional);
  if (providers == nullptr) return;
  for (const auto& [key, value] : providers->entries) {
    auto name = readString(key, m.field("providers"), problems);
    if (!name) continue;
    const std::string field = childPath(m.field("providers"), *name);
    if (name->empty()) {
      problems.add(key, field, "provider name must not be empty");
      continue;
    }
    if (out.providers.count(*name) > 0) {
      problems.add(key, field, "provider given twice");
      continue;
    }
    readMetricProvider(value, field, out.providers[*name], problems);
  }
}

// `notifications: {webhooks: [{name, url, events, ...}]}` (docs/operating.md#notifications).
void readNotifications(const YamlNode& node, const std::string& path, HostConfig::Notifications& out,
                       Problems& problems) {
  MapReader m(node, path, kNotificationsKeys, problems);
  const YamlNode* webhooks = m.sequence("webhooks", Need::kOptional);
  if (webhooks == nullptr) return;
  std::set<std::string> names;
  for (size_t i = 0; i < webhooks->items.size(); ++i) {
    MapReader w(webhooks->items[i], indexPath(m.field("webhooks"), i), kWebhookKeys, problems);
    model::Webhook webhook;
    if (auto v = w.name("name", Need::kRequired)) {
      webhook.name = *v;
      if (!names.insert(*v).second) problems.add(*w.get("name"), w.field("name"), "webhook name given twice");
    }
    if (auto v = w.string("url", Need::kRequired)) {
      webhook.url = *v;
      const size_t host = v->find("://") + 3;
      if ((v->rfind("http://", 0) != 0 && v->rfind("https://", 0) != 0) || host >= v->size() || (*v)[host] == '/') {
        problems.add(*w.get("url"), w.field("url"), "must be an http:// or https:// URL with a host");
      }
    }
    if (auto v = w.stringList("events", Need::kOptional)) {
      if (v->empty()) problems.add(*w.get("events"), w.field("events"), "must name at least one event pattern");
      for (const std::string& pattern : *v) {
        const std::string kind = pattern.substr(0, pattern.find(':'));
        const bool star = kind.ends_with(".*");
        const std::string stem = star ? kind.substr(0, kind.size() - 2) : kind;
        if (stem.empty() || stem.find('*') != std::string::npos || pattern.ends_with(":")) {
          problems.add(*w.get("events"), w.field("events"),
                       "\"" + pattern +
                           "\" is not an event pattern; expected a kind (operation.approval), a prefix "
                           "(deployment.*) or a state event with its state (operation.state:PENDING_APPROVAL)");
        }
      }
      webhook.events = *v;
    }
    readInt(w, "timeout_ms", {1, 120'000}, webhook.timeout_ms);
    readInt(w, "max_attempts", {1, 1000}, webhook.max_attempts);
    readInt(w, "backoff_initial_ms", {1, 3'600'000}, webhook.backoff_initial_ms);
    readInt(w, "backoff_max_ms", {1, 86'400'000}, webhook.backoff_max_ms);
    if (webhook.backoff_max_ms < webhook.backoff_initial_ms) {
      problems.add(webhooks->items[i], w.field("backoff_max_ms"), "must be at least backoff_initial_ms");
    }
    out.webhooks.push_back(std::move(webhook));
  }
}

// `traffic:`: `router` names the kind; every other key is the router's (its factory checks
// them), so they are read as free-form data.
void readTraffic(const YamlNode& node, const std::string& path, HostConfig::Traffic& out, Problems& problems) {
  if (!expectKind(node, Kind::kMapping, path, problems)) return;
  out.declared = true;
  auto all = readJson(node, path, problems);
  if (!all || !all->is_object()) return;
  if (auto r = all->find("router"); r != all->end()) {
    if (!r->is_string() || r->get<std::string>().empty()) {
      problems.add(node, childPath(path, "router"), "must name a router kind, e.g. haproxy");
    } else {
      out.router = r->get<std::string>();
    }
    all->erase(r);
  }
  out.settings = std::move(*all);
}

std::string joinPath(const std::string& dir, std::string_view leaf) {
  if (dir.empty() || dir.back() == '/') return dir + std::string(leaf);
  return dir + "/" + std::string(leaf);
}

// Glob match with `*` and `?`; on a mismatch after a `*`, let that `*` eat one more character.
bool globMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

ImageCatalog defaultImageCatalog() {
  const std::vector<std::string> workload = {"{{tide}}",  "workload",     "--listen", "127.0.0.1:{{port.tcp.80}}",
                                             "--version", "{{image.tag}}"};
  return {{"nginx:*", workload}, {"tide-workload:*", workload}};
}

Result<HostConfig> parseHostConfig(std::string_view text, const std::string& source) {
  TIDE_ASSIGN_OR_RETURN(std::vector<YamlNode> docs, parseYamlDocuments(text, source));
  HostConfig config;
  if (docs.empty()) return config;  // an empty file means every default
  Problems problems(source);
  if (docs.size() > 1) {
    problems.add(docs[1], "", "expected one document, got " + std::to_string(docs.size()));
    return problems.toStatus();
  }
  MapReader m(docs.front(), "", kHostKeys, problems);
  readListen(m, config.listen);
  readNonEmptyString(m, "data_dir", config.data_dir);
  readDatabase(m, config.database);
  readNonEmptyString(m, "policies_dir", config.policies_dir);
  readNonEmptyString(m, "scripts_dir", config.scripts_dir);
  if (const YamlNode* v = m.get("auth")) readAuth(*v, m.field("auth"), config.auth, problems);
  if (const YamlNode* v = m.get("process")) readProcess(*v, m.field("process"), config.process, problems);
  if (const YamlNode* v = m.get("limits")) readLimits(*v, m.field("limits"), config.limits, problems);
  if (const YamlNode* v = m.get("tls")) readTls(*v, m.field("tls"), config.tls, problems);
  if (const YamlNode* v = m.get("retention")) readRetention(*v, m.field("retention"), config.retention, problems);
  if (const YamlNode* v = m.get("agents")) readAgents(*v, m.field("agents"), config.agents, problems);
  if (const YamlNode* v = m.get("analysis")) readAnalysis(*v, m.field("analysis"), config.analysis, problems);
  if (const YamlNode* v = m.get("traffic")) readTraffic(*v, m.field("traffic"), config.traffic, problems);
  if (const YamlNode* v = m.get("notifications")) {
    readNotifications(*v, m.field("notifications"), config.notifications, problems);
  }
  if (auto v = m.string("default_verdict", Need::kOptional)) {
    if (*v == "manual" || *v == "deny") {
      config.default_verdict = *v;
    } else {
      problems.add(*m.get("default_verdict"), m.field("default_verdict"),
                   "unknown verdict \"" + *v + "\"; expected manual or deny");
    }
  }
  if (!problems.empty()) return problems.toStatus();
  return config;
}

Result<HostConfig> loadHostConfig(const std::string& path) {
  if (path.empty()) return HostConfig{};
  TIDE_ASSIGN_OR_RETURN(std::string text, readInputFile(path));
  return parseHostConfig(text, path);
}

Result<ImageCatalog> loadImageCatalog(const std::string& path) {
  TIDE_ASSIGN_OR_RETURN(std::string text, readInputFile(path));
  TIDE_ASSIGN_OR_RETURN(std::vector<YamlNode> docs, parseYamlDocuments(text, path));
  Problems problems(path);
  if (docs.size() != 1) return Status::invalidArgument(path + ": expected one YAML document, a mapping of image patterns");
  ImageCatalog catalog;
  readImageCatalog(docs.front(), "", catalog, problems);
  if (!problems.empty()) return problems.toStatus();
  return catalog;
}

void finalizeHostConfig(HostConfig& config) {
  if (config.database.empty()) config.database = "sqlite://" + joinPath(config.data_dir, "tide.db");
  if (config.process.volume_root.empty()) config.process.volume_root = joinPath(config.data_dir, "volumes");
}

const std::vector<std::string>* matchImage(const HostConfig::Process& process, std::string_view image) {
  for (const auto& [pattern, argv] : process.image_catalog) {
    if (globMatch(pattern, image)) return &argv;
  }
  return nullptr;
}

bool commandAllowed(const std::vector<std::string>& command_allow, std::string_view program) {
  for (const std::string& pattern : command_allow) {
    if (globMatch(pattern, program)) return true;
  }
  return false;
}

}  // namespace tide::config
