#pragma once
// HTTP load for the benches that compare tide with a peer: wrk's figures, and nginx serving
// fixed bytes on a port of its own (api_bench's peer, traffic_bench's backend).

#include <regex>

#include "tests/bench/bench_support.h"

namespace tide::bench {

struct WrkResult {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t errors = 0;  // socket errors and non-2xx replies
};

inline double toMs(double value, const std::string& unit) {
  if (unit == "us") return value / 1000;
  if (unit == "s") return value * 1000;
  if (unit == "m") return value * 60000;
  return value;
}

inline std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) fail("cannot run " + command);
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

inline WrkResult wrk(const std::string& url, const std::string& token, int seconds) {
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
    // nginx's workers run as nobody: they must be able to reach www/ (mkdtemp made the
    // scratch dir 0700; before this, every request was 403 and only the status was checked).
    std::filesystem::permissions(dir.path, std::filesystem::perms::group_exec | std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add);
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

}  // namespace tide::bench
