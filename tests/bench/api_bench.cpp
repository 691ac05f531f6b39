// API load bench: GET /v1/nodes/{name} under wrk -t2 -c64, side by side with nginx
// (Debian's nginx-light) serving the same bytes as a static file in the same run; then the
// same load while the host rolls out 1,000 sim instances, with a client reading the
// 1,000-instance plan view (GET /v1/plans/{name}) over and over meanwhile. Prints one
// JSON line:
//   {"bench":"api_load", "idle_rps", "idle_p99_ms", "nginx_rps", "nginx_p99_ms",
//    "ratio_vs_nginx", "rollout_rps", "rollout_p99_ms", "plan_p99_ms", ...}
//
//   api_bench [seconds-per-phase]
//
// Needs wrk and nginx on PATH (.ci/install-deps --bench installs them); exits 1 without.

#include <atomic>
#include <regex>

#include "tests/bench/bench_support.h"

using namespace tide::bench;

namespace {

struct WrkResult {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t errors = 0;  // socket errors and non-2xx replies
};

double toMs(double value, const std::string& unit) {
  if (unit == "us") return value / 1000;
  if (unit == "s") return value * 1000;
  if (unit == "m") return value * 60000;
  return value;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) fail("cannot run " + command);
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

WrkResult wrk(const std::string& url, const std::string& token, int seconds) {
  std::string command = "wrk -t2 -c64 -d" + std::to_string(seconds) + "s --latency";
  if (!token.empty()) command += " -H 'Authorization: Bearer " + token + "'";
  const std::string out = run(command + " " + url + " 2>&1");
  WrkResult r;
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(Requests/sec:\s+([0-9.]+))"))) r.rps = std::stod(m[1]);
  if (std::regex_search(out, m, std::regex(R"(\s50%\s+([0-9.]+)(us|ms|s|m))"))) r.p50_ms = toMs(std::stod(m[1]), m[2]);
  if (std::regex_search(out, m, std::regex(R"(\s99%\s+([0-9.]+)(us|ms|s|m))"))) r.p99_ms = toMs(std::stod(m[1]), m[2]);
  if (std::regex_search(out, m, std::regex(R"(Non-2xx or 3xx responses:\s+(\d+))"))) r.errors += std::stoll(m[1]);
  if (std::regex_search(out, m, std::regex(R"(connect (\d+), read (\d+), write (\d+), timeout (\d+))"))) {
    r.errors += std::stoll(m[1]) + std::stoll(m[2]) + std::stoll(m[3]) + std::stoll(m[4]);
  }
  if (r.rps == 0) fail("wrk printed no figures:\n" + out);
  return r;
}

// nginx serving `body` at `path` from a scratch root, on its own port: a child in the
// foreground (`daemon off`) that ends with the bench (spawnTied); stopped by the destructor.
class Nginx {
 public:
  Nginx(const ScratchDir& dir, const std::string& path, const std::string& body) : root_(dir.path / "nginx") {
    std::filesystem::create_directories(root_ / "www" / std::filesystem::path(path).parent_path().relative_path());
    std::ofstream(root_ / "www" / std::filesystem::path(path).relative_path()) << body;
    port_ = freePort();
    const std::string r = root_.string();
    std::ofstream(root_ / "nginx.conf") << "daemon off; worker_processes 2; pid " << r << "/nginx.pid; error_log " << r
                                        << "/error.log;\n"
                                        << "events { worker_connections 4096; }\n"
                                        << "http { access_log off; client_body_temp_path " << r
                                        << "/tmp; proxy_temp_path " << r << "/tmp;\n"
                                        << "  fastcgi_temp_path " << r << "/tmp; uwsgi_temp_path " << r
                                        << "/tmp; scgi_temp_path " << r << "/tmp;\n"
                                        << "  server { listen 127.0.0.1:" << port_ << "; root " << r
                                        << "/www; default_type application/json; } }\n";
    const std::string log = r + "/nginx.out";
    pid_ = spawnTied("nginx", {"nginx", "-p", r, "-c", r + "/nginx.conf"}, log);
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(std::chrono::milliseconds(200));
    const auto started = Steady::now();
    while (!client.Get(path)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_ || secondsSince(started) > 30) {
        pid_ = -1;
        std::ifstream in(log);
        fail("nginx did not start: " + std::string(std::istreambuf_iterator<char>(in), {}));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~Nginx() { tide::testing::killAndReap(pid_, SIGTERM); }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  std::filesystem::path root_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  if (run("command -v wrk").empty() || run("command -v nginx").empty()) {
    fail("wrk and nginx are needed: apt-get install wrk nginx-light (or .ci/install-deps --bench)");
  }
  Fleet fleet;  // 100 sim nodes, a 1,000-instance plan, max_per_node 10
  ScratchDir dir;
  Server server(dir, benchConfig());
  server.post("/v1/manifests", inventoryManifest(fleet), "application/yaml");
  server.post("/v1/manifests", planManifest(fleet), "application/yaml");

  const std::string node_path = "/v1/nodes/n00001";
  const std::string node_body = server.client()->Get(node_path.c_str())->body;
  Nginx nginx(dir, node_path, node_body);

  note("api_load: idle, GET " + node_path + " (" + std::to_string(node_body.size()) + " bytes), " +
       std::to_string(seconds) + " s each");
  const WrkResult idle = wrk(server.url() + node_path, server.token(), seconds);
  const WrkResult peer = wrk(nginx.url(node_path), "", seconds);
  std::fprintf(stderr, "  tide  %9.0f req/s  p99 %7.2f ms\n  nginx %9.0f req/s  p99 %7.2f ms\n", idle.rps, idle.p99_ms,
               peer.rps, peer.p99_ms);

  note("api_load: the same load while 1,000 sim instances roll out, plan view read meanwhile");
  std::atomic<bool> rolling{true};
  std::vector<double> plan_ms;
  double rollout_s = 0;
  std::thread reader([&] {
    auto client = server.client();
    const std::string path = "/v1/plans/" + fleet.plan;
    while (rolling) {
      const auto t = Steady::now();
      auto reply = client->Get(path.c_str());
      if (!reply || reply->status != 200) fail("GET " + path + " failed during the rollout");
      plan_ms.push_back(secondsSince(t) * 1000);
    }
  });
  std::thread rollout([&] {
    const auto started = Steady::now();
    server.post("/v1/manifests", deploymentManifest(fleet, "d1", "1"), "application/yaml");
    if (!waitRolledOut(server, fleet, "d1", 600, started, [](double, int64_t, const std::string&) {}, 1e9)) {
      fail("the rollout did not complete");
    }
    rollout_s = secondsSince(started);
  });
  const WrkResult busy = wrk(server.url() + node_path, server.token(), seconds);
  rollout.join();
  rolling = false;
  reader.join();
  std::fprintf(stderr, "  tide  %9.0f req/s  p99 %7.2f ms during a %.1f s rollout; plan view p99 %.1f ms (%zu reads)\n",
               busy.rps, busy.p99_ms, rollout_s, percentile(plan_ms, 0.99), plan_ms.size());

  Json line = {{"bench", "api_load"},
               {"connections", 64},
               {"body_bytes", node_body.size()},
               {"idle_rps", idle.rps},
               {"idle_p50_ms", idle.p50_ms},
               {"idle_p99_ms", idle.p99_ms},
               {"idle_errors", idle.errors},
               {"nginx_rps", peer.rps},
               {"nginx_p99_ms", peer.p99_ms},
               {"ratio_vs_nginx", idle.rps / peer.rps},
               {"rollout_rps", busy.rps},
               {"rollout_p99_ms", busy.p99_ms},
               {"rollout_errors", busy.errors},
               {"rollout_seconds", rollout_s},
               {"plan_reads", plan_ms.size()},
               {"plan_p50_ms", percentile(plan_ms, 0.50)},
               {"plan_p99_ms", percentile(plan_ms, 0.99)}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
