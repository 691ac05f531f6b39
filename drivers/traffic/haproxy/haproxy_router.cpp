#include "drivers/traffic/haproxy/haproxy_router.h"

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "drivers/traffic/haproxy/runtime_api.h"
#include "host/core/durable_file.h"
#include "host/core/fd.h"

namespace tide::drivers::traffic {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr auto kLaunchTimeout = std::chrono::seconds(20);
constexpr auto kStopTimeout = std::chrono::seconds(10);
constexpr auto kSuperviseEvery = std::chrono::milliseconds(250);
constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
// A haproxy that ran this long before dying earns a restart without backoff.
constexpr auto kStableRun = std::chrono::seconds(10);

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> commandLine(pid_t pid) {
  const std::string text = readText("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    args.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return args;
}

// A live (not zombie) process started with `-f <config_path>`: a haproxy of this router.
bool runsConfig(pid_t pid, const std::string& config_path) {
  if (pid <= 0) return false;
  std::optional<ProcStat> stat = readProcStat(pid);
  if (!stat || stat->state == 'Z' || stat->state == 'X') return false;
  const std::vector<std::string> args = commandLine(pid);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "-f" && args[i + 1] == config_path) return true;
  }
  return false;
}

std::vector<pid_t> processesRunning(const std::string& config_path) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    if (runsConfig(static_cast<pid_t>(pid), config_path)) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return pids;
}

pid_t readPid(const std::string& path) {
  std::istringstream in(readText(path));
  long pid = 0;
  in >> pid;
  return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

// "" when a server could bind `address` now; else why not ("127.0.0.1:8080: Address already
// in use"). SO_REUSEADDR like haproxy, so a TIME_WAIT connection is no obstacle.
std::string bindProblem(const std::string& address) {
  std::string host;
  int port = 0;
  if (!splitAddress(address, &host, &port)) return address + ": not host:port";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const char* node = host.empty() || host == "*" ? nullptr : host.c_str();
  const int rc = ::getaddrinfo(node, std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return address + ": " + gai_strerror(rc);
  std::string problem;
  Fd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  if (!fd.valid()) {
    problem = address + ": socket: " + std::strerror(errno);
  } else {
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0) {
      problem = address + ": " + std::strerror(errno) + (errno == EADDRINUSE ? " (another program listens there)" : "");
    }
  }
  ::freeaddrinfo(found);
  return problem;
}

// 127.0.0.1:<a port the kernel picked>, for the metrics frontend when none is configured.
std::string freeLoopbackAddress() {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return "127.0.0.1:9101";
  }
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

Json planToJson(const DesiredPlanTraffic& plan) {
  Json routes = Json::array();
  for (const model::HeaderRoute& route : plan.endpoint.header_routes) routes.push_back({route.header, route.value});
  Json servers = Json::array();
  for (const BackendServer& server : plan.servers) {
    servers.push_back({{"id", server.id},
                       {"deployment", server.deployment},
                       {"address", server.address},
                       {"weight", server.weight},
                       {"drain", server.drain},
                       {"preview", server.preview}});
  }
  return {{"plan", plan.plan},
          {"listen", plan.endpoint.listen},
          {"preview_listen", plan.endpoint.preview_listen},
          {"health_path", plan.endpoint.health_path},
          {"header_routes", routes},
          {"servers", servers}};
}

// Never throws: desired.json is ours, but a damaged one must not take the host down.
std::vector<DesiredPlanTraffic> plansFromJson(const Json& json) {
  std::vector<DesiredPlanTraffic> plans;
  try {
    for (const Json& entry : json) {
      DesiredPlanTraffic plan;
      plan.plan = entry.at("plan").get<std::string>();
      plan.endpoint.listen = entry.at("listen").get<std::string>();
      plan.endpoint.preview_listen = entry.at("preview_listen").get<std::string>();
      plan.endpoint.health_path = entry.at("health_path").get<std::string>();
      for (const Json& route : entry.at("header_routes")) {
        plan.endpoint.header_routes.push_back({route.at(0).get<std::string>(), route.at(1).get<std::string>()});
      }
      for (const Json& server : entry.at("servers")) {
        plan.servers.push_back({server.at("id").get<std::string>(), server.at("deployment").get<std::string>(),
                                server.at("address").get<std::string>(), server.at("weight").get<int>(),
                                server.at("drain").get<bool>(), server.at("preview").get<bool>()});
      }
      plans.push_back(std::move(plan));
    }
  } catch (const std::exception&) {
    return {};
  }
  return plans;
}

// What a reload is needed for: everything in the config but the servers.
Json structureOf(const std::vector<const DesiredPlanTraffic*>& served, const std::string& metrics_listen,
                 const HealthCheckOptions& check, const std::string& log_socket, int log_sample) {
  Json plans = Json::array();
  for (const DesiredPlanTraffic* plan : served) {
    Json entry = planToJson(*plan);
    entry.erase("servers");
    plans.push_back(std::move(entry));
  }
  return {{"metrics_listen", metrics_listen},
          {"check", {check.interval_ms, check.fall, check.rise}},
          {"log_socket", log_socket},
          {"log_sample", log_sample},
          {"plans", plans}};
}

bool validName(const std::string& text) {
  return !text.empty() && std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::iscntrl(c); });
}

bool validHeader(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_';
  });
}

std::vector<ErrorDetail> validatePlans(const std::vector<DesiredPlanTraffic>& plans) {
  std::vector<ErrorDetail> problems;
  std::set<std::string> names;
  for (size_t i = 0; i < plans.size(); ++i) {
    const DesiredPlanTraffic& plan = plans[i];
    const std::string at = "plans[" + std::to_string(i) + "]";
    if (!validName(plan.plan)) problems.push_back({at + ".plan", "must be a non-empty name", ""});
    if (!names.insert(plan.plan).second) problems.push_back({at + ".plan", "plan " + plan.plan + " is listed twice", ""});
    if (!splitAddress(plan.endpoint.listen, nullptr, nullptr)) {
      problems.push_back({at + ".endpoint.listen", "must be host:port with a port in 1..65535", ""});
    }
    if (!plan.endpoint.preview_listen.empty() && !splitAddress(plan.endpoint.preview_listen, nullptr, nullptr)) {
      problems.push_back({at + ".endpoint.preview_listen", "must be empty or host:port", ""});
    }
    const std::string& health = plan.endpoint.health_path;
    if (!health.empty() && (health[0] != '/' || std::any_of(health.begin(), health.end(), [](unsigned char c) {
                              return std::isspace(c) || std::iscntrl(c) || c == '#';
                            }))) {
      problems.push_back({at + ".endpoint.health_path", "must be empty or a path starting with / without spaces", ""});
    }
    for (size_t k = 0; k < plan.endpoint.header_routes.size(); ++k) {
      const model::HeaderRoute& route = plan.endpoint.header_routes[k];
      const std::string route_at = at + ".endpoint.header_routes[" + std::to_string(k) + "]";
      if (!validHeader(route.header)) problems.push_back({route_at + ".header", "must be a header name", ""});
      if (!validName(route.value)) problems.push_back({route_at + ".value", "must be non-empty, no control characters", ""});
    }
    std::set<std::string> ids;
    for (size_t j = 0; j < plan.servers.size(); ++j) {
      const BackendServer& server = plan.servers[j];
      const std::string server_at = at + ".servers[" + std::to_string(j) + "]";
      if (!validName(server.id)) problems.push_back({server_at + ".id", "must be a non-empty id", ""});
      if (!ids.insert(server.id).second) problems.push_back({server_at + ".id", server.id + " is listed twice", ""});
      if (!splitAddress(server.address, nullptr, nullptr)) {
        problems.push_back({server_at + ".address", "must be host:port with a port in 1..65535", ""});
      }
      if (server.weight < 0 || server.weight > 256) problems.push_back({server_at + ".weight", "must be in 0..256", ""});
    }
  }
  return problems;
}

struct Field {
  std::string_view key;
  int min = 0;
  int max = 0;
};

}  // namespace

Result<HaproxyOptions> parseHaproxyOptions(const Json& config) {
  HaproxyOptions options;
  if (config.is_null()) return options;
  if (!config.is_object()) {
    return Status::invalidArgument("haproxy router: bad traffic config", {{"traffic", "must be an object", ""}});
  }
  static constexpr std::string_view kKnown =
      "binary, metrics_listen, check_interval_ms, check_fall, check_rise, restart_backoff_max_ms, request_log_sample";
  std::vector<ErrorDetail> problems;
  auto whole = [&](const std::string& key, const Json& value, int min, int max) -> std::optional<int> {
    if (!value.is_number_integer() || value.get<int64_t>() < min || value.get<int64_t>() > max) {
      problems.push_back({"traffic." + key, "must be a whole number in [" + std::to_string(min) + ", " +
                                                std::to_string(max) + "]", ""});
      return std::nullopt;
    }
    return static_cast<int>(value.get<int64_t>());
  };
  for (const auto& [key, value] : config.items()) {
    if (key == "binary") {
      if (!value.is_string() || value.get<std::string>().empty() || value.get<std::string>()[0] != '/') {
        problems.push_back({"traffic.binary", "must be the absolute path of haproxy", ""});
      } else {
        options.binary = value.get<std::string>();
      }
    } else if (key == "metrics_listen") {
      if (!value.is_string() || !splitAddress(value.get<std::string>(), nullptr, nullptr)) {
        problems.push_back({"traffic.metrics_listen", "must be host:port with a port in 1..65535", ""});
      } else {
        options.metrics_listen = value.get<std::string>();
      }
    } else if (key == "check_interval_ms") {
      if (auto v = whole(key, value, 100, 60000)) options.check.interval_ms = *v;
    } else if (key == "check_fall") {
      if (auto v = whole(key, value, 1, 100)) options.check.fall = *v;
    } else if (key == "check_rise") {
      if (auto v = whole(key, value, 1, 100)) options.check.rise = *v;
    } else if (key == "restart_backoff_max_ms") {
      if (auto v = whole(key, value, 100, 600000)) options.restart_backoff_max = std::chrono::milliseconds(*v);
    } else if (key == "request_log_sample") {
      if (auto v = whole(key, value, 0, 1000)) options.request_log_sample = *v;
    } else {
      problems.push_back({"traffic." + key, "unknown key (known: " + std::string(kKnown) + ")", ""});
    }
  }
  if (!problems.empty()) return Status::invalidArgument("haproxy router: bad traffic config", problems);
  return options;
}

Result<std::unique_ptr<Router>> makeHaproxyRouter(const Json& config, const RouterContext& context) {
  TIDE_ASSIGN_OR_RETURN(HaproxyOptions options, parseHaproxyOptions(config));
  return buildHaproxyRouter(options, context);
}

Result<std::unique_ptr<Router>> buildHaproxyRouter(const HaproxyOptions& options, const RouterContext& context) {
  if (context.data_dir.empty()) return Status::invalidArgument("haproxy router: no data dir");
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return Status::invalidArgument(
        "haproxy router: no executable haproxy at " + options.binary + " (" + std::strerror(errno) +
            "); install the haproxy package or set traffic.binary",
        {{"traffic.binary", "no executable at " + options.binary, ""}});
  }
  const std::filesystem::path dir = std::filesystem::path(context.data_dir) / "traffic" / "haproxy";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::internal("haproxy router: cannot create " + dir.string() + ": " + ec.message());
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  return std::unique_ptr<Router>(std::make_unique<HaproxyRouter>(options, dir.string()));
}

HaproxyRouter::HaproxyRouter(HaproxyOptions options, std::string dir)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      config_path_(dir_ + "/haproxy.cfg"),
      pid_path_(dir_ + "/haproxy.pid"),
      socket_path_(dir_ + "/admin.sock"),
      log_path_(dir_ + "/haproxy.log"),
      running_path_(dir_ + "/running.json"),
      desired_path_(dir_ + "/desired.json"),
      request_log_(dir_ + "/log.sock") {}

HaproxyRouter::~HaproxyRouter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
}

Status HaproxyRouter::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return Status::ok();
  started_ = true;
  // Without the log the router serves all the same; only the p95 at the router is missing
  // (its analysis then finds no data and says so).
  if (options_.request_log_sample == 0) {
    // Off by configuration.
  } else if (Status listening = request_log_.start(); listening.isOk()) {
    log_socket_ = request_log_.socketPath();
  } else {
    std::fprintf(stderr, "tide: %s\n", listening.toString().c_str());
  }
  const pid_t pid = readPid(pid_path_);
  if (runsConfig(pid, config_path_)) {
    Running running;
    running.identity = {pid, readProcStat(pid)->start_time};
    // running.json says what this process was started with; another pid's is stale.
    Json recorded = Json::parse(readText(running_path_), nullptr, false);
    if (recorded.is_object() && recorded.value("pid", 0) == pid && recorded.contains("structure")) {
      running.structure = recorded["structure"];
      metrics_listen_ = running.structure.value("metrics_listen", "");
    }
    running_ = std::move(running);
    // The last desired state, so the supervisor can restart haproxy with it before the next apply().
    Json desired = Json::parse(readText(desired_path_), nullptr, false);
    if (desired.is_array()) desired_ = plansFromJson(desired);
  }
  supervisor_ = std::thread([this] { supervise(); });
  return Status::ok();
}

Status HaproxyRouter::apply(const std::vector<DesiredPlanTraffic>& plans) {
  std::vector<ErrorDetail> problems = validatePlans(plans);
  if (!problems.empty()) return Status::invalidArgument("haproxy router: bad desired traffic", problems);
  std::lock_guard<std::mutex> lock(mu_);
  if (plans != desired_ || !std::filesystem::exists(desired_path_)) {
    Json json = Json::array();
    for (const DesiredPlanTraffic& plan : plans) json.push_back(planToJson(plan));
    TIDE_RETURN_IF_ERROR(writeFileDurably(desired_path_, json.dump(1)).withPrefix("haproxy router"));
  }
  desired_ = plans;
  return reconcileLocked();
}

bool HaproxyRouter::aliveLocked() {
  if (!running_) return false;
  if (isRunning(running_->identity) && runsConfig(running_->identity.pid, config_path_)) return true;
  running_.reset();
  return false;
}

std::string HaproxyRouter::metricsListenLocked() {
  if (metrics_listen_.empty()) {
    metrics_listen_ = !options_.metrics_listen.empty() ? options_.metrics_listen : freeLoopbackAddress();
  }
  return metrics_listen_;
}

Status HaproxyRouter::reconcileLocked() {
  plan_errors_.clear();
  if (desired_.empty()) {
    endProcessesLocked();
    return Status::ok();
  }
  const bool alive = aliveLocked();
  // Addresses the running haproxy binds already (their bind check would fail on ourselves).
  std::set<std::string> ours;
  if (alive && running_->structure.is_object()) {
    ours.insert(running_->structure.value("metrics_listen", ""));
    for (const Json& plan : running_->structure["plans"]) {
      ours.insert(plan.value("listen", ""));
      ours.insert(plan.value("preview_listen", ""));
    }
  }
  const std::string metrics = metricsListenLocked();
  std::map<std::string, std::string> claimed = {{metrics, "the router's metrics"}};
  std::vector<const DesiredPlanTraffic*> served;
  for (const DesiredPlanTraffic& plan : desired_) {
    std::string error;
    for (const std::string* address : {&plan.endpoint.listen, &plan.endpoint.preview_listen}) {
      if (address->empty() || !error.empty()) continue;
      if (auto taken = claimed.find(*address); taken != claimed.end()) {
        error = *address + " is already " + taken->second + "'s address";
      } else if (!ours.contains(*address)) {
        const std::string problem = bindProblem(*address);
        if (!problem.empty()) error = "cannot listen on " + problem;
      }
    }
    if (!error.empty()) {
      plan_errors_[plan.plan] = error;
      continue;
    }
    claimed[plan.endpoint.listen] = "plan " + plan.plan;
    if (!plan.endpoint.preview_listen.empty()) claimed[plan.endpoint.preview_listen] = "plan " + plan.plan + " (preview)";
    served.push_back(&plan);
  }
  if (served.empty()) {
    endProcessesLocked();
    return Status::ok();
  }
  ConfigInput input{socket_path_, metrics, options_.check, {}, log_socket_, options_.request_log_sample};
  for (const DesiredPlanTraffic* plan : served) input.plans.push_back(*plan);
  TIDE_RETURN_IF_ERROR(writeFileDurably(config_path_, renderConfig(input)).withPrefix("haproxy router: config"));
  const Json structure = structureOf(served, metrics, options_.check, log_socket_, options_.request_log_sample);
  if (!alive) {
    TIDE_RETURN_IF_ERROR(launchLocked(structure, false));
  } else if (running_->structure != structure) {
    TIDE_RETURN_IF_ERROR(launchLocked(structure, true));
  }
  return reconcileRuntimeLocked(served);
}

Status HaproxyRouter::launchLocked(const Json& structure, bool reload) {
  std::vector<std::string> args = {options_.binary, "-D", "-f", config_path_, "-p", pid_path_};
  if (reload) {
    args.insert(args.end(), {"-x", socket_path_, "-sf", std::to_string(running_->identity.pid)});
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const auto log_start = std::filesystem::exists(log_path_) ? std::filesystem::file_size(log_path_) : 0;
  Fd log(::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  Fd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!log.valid() || !null_in.valid()) {
    return Status::internal("haproxy router: cannot open " + log_path_ + ": " + std::strerror(errno));
  }
  // haproxy -D checks the config and binds in the foreground, then forks the daemon (its own
  // session) and exits: its exit code says whether it serves. Only async-signal-safe calls
  // between fork and exec.
  const pid_t child = ::fork();
  if (child < 0) return Status::unavailable(std::string("haproxy router: fork: ") + std::strerror(errno));
  if (child == 0) {
    ::setsid();
    ::dup2(null_in.get(), 0);
    ::dup2(log.get(), 1);
    ::dup2(log.get(), 2);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction fallback {};  // the host ignores SIGPIPE (host/main.cpp); haproxy starts with the default
    fallback.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &fallback, nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = SteadyClock::now() + kLaunchTimeout;
  int wait_status = 0;
  while (true) {
    const pid_t done = ::waitpid(child, &wait_status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) return Status::internal(std::string("haproxy router: waitpid: ") + std::strerror(errno));
    if (SteadyClock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &wait_status, 0);
      return Status::unavailable("haproxy router: haproxy did not start within 20 s (see " + log_path_ + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    std::string output = readText(log_path_);
    output = output.size() > log_start ? output.substr(log_start) : "";
    if (output.size() > 1500) output = output.substr(output.size() - 1500);
    const std::string how = WIFEXITED(wait_status) ? "exited with " + std::to_string(WEXITSTATUS(wait_status))
                                                   : "was killed by signal " + std::to_string(WTERMSIG(wait_status));
    last_launch_error_ = "haproxy " + std::string(reload ? "reload" : "start") + " failed: " + how +
                         (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 127 ? " (cannot exec " + options_.binary + ")" : "") +
                         (output.empty() ? "" : ": " + output);
    return Status::unavailable("haproxy router: " + last_launch_error_);
  }
  const pid_t pid = readPid(pid_path_);
  std::optional<ProcStat> stat = readProcStat(pid);
  if (!stat || !runsConfig(pid, config_path_)) {
    last_launch_error_ = "haproxy started but its pid file " + pid_path_ + " names no running haproxy";
    return Status::unavailable("haproxy router: " + last_launch_error_);
  }
  last_launch_error_.clear();
  running_ = Running{{pid, stat->start_time}, structure};
  launched_at_ = SteadyClock::now();
  const Json recorded = {{"pid", pid}, {"structure", structure}};
  TIDE_RETURN_IF_ERROR(writeFileDurably(running_path_, recorded.dump(1)).withPrefix("haproxy router"));
  return Status::ok();
}

Status HaproxyRouter::reconcileRuntimeLocked(const std::vector<const DesiredPlanTraffic*>& served) {
  TIDE_ASSIGN_OR_RETURN(std::string state_text, runtimeCommand(socket_path_, "show servers state"));
  TIDE_ASSIGN_OR_RETURN(std::string stat_text, runtimeCommand(socket_path_, "show stat"));
  std::map<std::pair<std::string, std::string>, ServerStateRow> present;
  for (ServerStateRow& row : parseServersState(state_text)) present[{row.backend, row.server}] = std::move(row);
  std::map<std::pair<std::string, std::string>, int64_t> sessions;
  for (const ServerStatRow& row : parseShowStat(stat_text)) sessions[{row.backend, row.server}] = row.current_sessions;

  Status first = Status::ok();
  auto act = [&](const std::string& command) {
    Status status = runtimeAction(socket_path_, command);
    if (!status.isOk() && first.isOk()) first = status.withPrefix("haproxy router");
    return status.isOk();
  };
  // Gains before losses: servers are added, raised and made ready before others are lowered,
  // drained or removed, so a switch (blue 256 → 0, green 0 → 256) never leaves a backend with
  // no server taking requests (haproxy would answer 503 in between).
  std::vector<std::function<void()>> losses;
  removals_pending_ = false;
  for (const DesiredPlanTraffic* plan : served) {
    for (const bool preview : {false, true}) {
      const std::string backend = preview ? previewBackend(plan->plan) : mainBackend(plan->plan);
      std::set<std::string> wanted;
      for (const BackendServer& server : plan->servers) {
        if (preview && !server.preview) continue;
        const std::string name = encodeName(server.id);
        const std::string path = backend + "/" + name;
        wanted.insert(name);
        const int weight = preview ? previewWeight(server) : server.weight;
        auto row = present.find({backend, name});
        if (row == present.end()) {
          // A dynamic server starts in maintenance with its check off.
          if (!act("add server " + path + " " + server.address + " " +
                   serverArguments(options_.check, weight, plan->endpoint.max_connections)))
            continue;
          act("enable health " + path);
          if (server.drain) {
            losses.push_back([&act, path] { act("set server " + path + " state drain"); });
          } else {
            act("set server " + path + " state ready");
          }
          continue;
        }
        if (row->second.weight < weight) act("set server " + path + " weight " + std::to_string(weight));
        if (row->second.weight > weight) {
          losses.push_back([&act, path, weight] { act("set server " + path + " weight " + std::to_string(weight)); });
        }
        const int admin = row->second.admin_state;
        const bool maint = (admin & kAdminMaintMask) != 0;
        const bool draining = (admin & kAdminDrainMask) != 0;
        if (server.drain && (maint || !draining)) {
          losses.push_back([&act, path] { act("set server " + path + " state drain"); });
        }
        if (!server.drain && (maint || draining)) act("set server " + path + " state ready");
      }
      for (const auto& [key, row] : present) {
        if (key.first != backend || wanted.contains(key.second)) continue;
        const std::string path = backend + "/" + key.second;
        const bool in_maint = (row.admin_state & 0x01) != 0;
        const int64_t in_flight = sessions[key];
        losses.push_back([this, &act, path, in_maint, in_flight] {
          if (!in_maint && !act("set server " + path + " state maint")) return;
          // Requests in flight finish first; the supervisor tries again until they have.
          if (in_flight > 0 || !runtimeAction(socket_path_, "del server " + path).isOk()) removals_pending_ = true;
        });
      }
    }
  }
  for (const auto& loss : losses) loss();
  return first;
}

void HaproxyRouter::endProcessesLocked() {
  running_.reset();
  std::vector<pid_t> pids = processesRunning(config_path_);
  for (pid_t pid : pids) ::kill(pid, SIGTERM);
  const auto deadline = SteadyClock::now() + kStopTimeout;
  while (!pids.empty() && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pids = processesRunning(config_path_);
  }
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  std::error_code ec;
  std::filesystem::remove(running_path_, ec);
}

Result<RouterState> HaproxyRouter::applied() {
  std::lock_guard<std::mutex> lock(mu_);
  RouterState state;
  auto withErrors = [&](RouterState& out) {
    for (const DesiredPlanTraffic& plan : desired_) {
      auto error = plan_errors_.find(plan.plan);
      if (error == plan_errors_.end()) continue;
      AppliedPlanTraffic entry;
      entry.plan = plan.plan;
      entry.error = error->second;
      out.plans.push_back(std::move(entry));
    }
  };
  if (!aliveLocked()) {
    state.message = desired_.empty() ? "no plan has traffic: haproxy is not running"
                                     : "haproxy is not running" +
                                           (last_launch_error_.empty() ? std::string() : " (" + last_launch_error_ + ")");
    withErrors(state);
    return state;
  }
  Result<std::string> state_text = runtimeCommand(socket_path_, "show servers state");
  Result<std::string> stat_text = state_text.isOk() ? runtimeCommand(socket_path_, "show stat") : state_text;
  if (!stat_text.isOk()) {
    state.message = "haproxy (pid " + std::to_string(running_->identity.pid) + ") does not answer: " +
                    stat_text.status().message();
    withErrors(state);
    return state;
  }
  state.up = true;
  if (running_->structure.is_object()) {
    state.metrics_url = "http://" + running_->structure.value("metrics_listen", "") + "/metrics";
  }
  std::map<std::pair<std::string, std::string>, const ServerStatRow*> stats;
  const std::vector<ServerStatRow> stat_rows = parseShowStat(*stat_text);
  for (const ServerStatRow& row : stat_rows) stats[{row.backend, row.server}] = &row;
  std::map<std::string, AppliedPlanTraffic> plans;
  std::vector<std::string> order;
  if (running_->structure.is_object()) {
    for (const Json& plan : running_->structure["plans"]) {
      AppliedPlanTraffic& entry = plans[plan.value("plan", "")];
      entry.plan = plan.value("plan", "");
      entry.listen = plan.value("listen", "");
      entry.preview_listen = plan.value("preview_listen", "");
      order.push_back(entry.plan);
    }
  }
  const std::vector<ServerStateRow> rows = parseServersState(*state_text);
  std::map<std::string, std::set<std::string>> preview_members;
  for (const ServerStateRow& row : rows) {
    bool preview = false;
    std::optional<std::string> plan = planOfBackend(row.backend, &preview);
    if (plan && preview) preview_members[*plan].insert(row.server);
  }
  for (const ServerStateRow& row : rows) {
    bool preview = false;
    std::optional<std::string> plan = planOfBackend(row.backend, &preview);
    std::optional<std::string> id = decodeName(row.server);
    if (!plan || preview || !id) continue;
    if (!plans.contains(*plan)) {
      plans[*plan].plan = *plan;
      order.push_back(*plan);
    }
    AppliedServer server;
    server.id = *id;
    server.address = row.address;
    server.weight = row.weight;
    if (row.admin_state & kAdminMaintMask) {
      server.state = "maint";
    } else if (row.admin_state & kAdminDrainMask) {
      server.state = "drain";
    } else if (row.op_state == 0) {
      server.state = "down";
    } else {
      server.state = "ready";
    }
    server.preview = preview_members[*plan].contains(row.server);
    for (const std::string& backend : {mainBackend(*plan), previewBackend(*plan)}) {
      if (auto stat = stats.find({backend, row.server}); stat != stats.end()) {
        server.current_sessions += stat->second->current_sessions;
      }
    }
    plans[*plan].servers.push_back(std::move(server));
  }
  for (const std::string& plan : order) state.plans.push_back(std::move(plans[plan]));
  withErrors(state);
  return state;
}

std::string HaproxyRouter::metricBackend(const std::string& plan) const { return mainBackend(plan); }

std::string HaproxyRouter::metricServer(const std::string& server_id) const { return encodeName(server_id); }

std::string HaproxyRouter::metricsText() const { return request_log_.render(); }

Status HaproxyRouter::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  endProcessesLocked();
  desired_.clear();
  plan_errors_.clear();
  std::error_code ec;
  std::filesystem::remove(desired_path_, ec);
  if (!processesRunning(config_path_).empty()) {
    return Status::internal("haproxy router: a haproxy running " + config_path_ + " survived SIGKILL");
  }
  return Status::ok();
}

void HaproxyRouter::supervise() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, kSuperviseEvery, [this] { return stopping_; });
    if (stopping_ || desired_.empty()) continue;
    if (aliveLocked()) {
      if (removals_pending_) {
        std::vector<const DesiredPlanTraffic*> served;
        for (const DesiredPlanTraffic& plan : desired_) {
          if (!plan_errors_.contains(plan.plan)) served.push_back(&plan);
        }
        // Best effort: a round that fails before its removals leaves removals_pending_ set, so the
        // next round (kSuperviseEvery) tries again; the next change reconciles everything anyway.
        (void)reconcileRuntimeLocked(served);
      }
      continue;
    }
    const auto now = SteadyClock::now();
    if (now < next_restart_) continue;
    // It died, or never started (a failed start, or every plan's address was taken). A haproxy
    // that ran for a while is restarted at once; one that keeps failing waits longer each time.
    const bool ran_long = launched_at_ != SteadyClock::time_point{} && now - launched_at_ > kStableRun;
    backoff_ = ran_long ? std::chrono::milliseconds(0)
                        : std::min(options_.restart_backoff_max, std::max(kFirstBackoff, backoff_ * 2));
    launched_at_ = SteadyClock::time_point{};
    next_restart_ = now + backoff_;
    // The config on disk holds the last split; reconcile writes it again, starts haproxy from
    // it and restores drains over the runtime API. A failed start is retried after the backoff
    // above; reconcileLocked keeps why in last_launch_error_, which applied() reports.
    (void)reconcileLocked();
  }
}

}  // namespace tide::drivers::traffic
