#include "drivers/process/workload.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include <httplib.h>
#include <CLI/CLI.hpp>

#include "drivers/http/elastic_task_queue.h"
#include "drivers/http/listening_server.h"
#include "drivers/process/workload_metrics.h"

namespace tide::drivers {
namespace {

using Clock = std::chrono::steady_clock;

// How often the main thread looks up from waiting for a signal to see whether the server
// still runs. --crash-after is kept to the millisecond whatever this is: 1,000 workloads
// waking 20 times a second each (50 ms, before) were 20,000 wake-ups a second for nothing.
constexpr auto kSignalPoll = std::chrono::seconds(1);
// Connection threads: httplib's default pool size at most, started as connections come and
// ended after this long idle, so a workload probed once a second keeps one.
constexpr size_t kMaxConnectionThreads = 8;
constexpr auto kConnectionThreadIdle = std::chrono::seconds(10);
constexpr int kCrashExitCode = 3;

bool parseListen(const std::string& listen, std::string& host, int& port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) return false;
  host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  long value = std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || value < 0 || value > 65535) return false;
  port = static_cast<int>(value);
  return true;
}

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void say(const std::string& line) {
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

int serve(const WorkloadOptions& options) {
  std::string host;
  int port = 0;
  if (!parseListen(options.listen, host, port)) {
    std::fprintf(stderr, "tide workload: --listen wants HOST:PORT, got \"%s\"\n", options.listen.c_str());
    return 1;
  }
  const Clock::time_point started = Clock::now();
  const char* instance_env = std::getenv("TIDE_INSTANCE");
  const std::string instance = instance_env != nullptr ? instance_env : "";

  ListeningServer server;
  // A reply's header and body go out as two writes: with Nagle's algorithm the second waits
  // for the ACK of the first, which a proxy that reuses the connection (HAProxy) delays by
  // 40 ms; about one request in twelve through the router took 40 ms before this.
  server.set_tcp_nodelay(true);
  server.new_task_queue = [] { return new ElasticTaskQueue(kMaxConnectionThreads, kConnectionThreadIdle); };
  server.Get("/healthz", [&](const httplib::Request&, httplib::Response& res) {
    double age = secondsSince(started);
    if (options.healthy_after_seconds && age < *options.healthy_after_seconds) {
      res.status = 503;
      res.set_content("starting", "text/plain");
    } else if (options.fail_health_after_seconds && age >= *options.fail_health_after_seconds) {
      res.status = 500;
      res.set_content("failing", "text/plain");
    } else {
      res.set_content("ok", "text/plain");
    }
  });
  server.Get("/version",
             [&](const httplib::Request&, httplib::Response& res) { res.set_content(options.version, "text/plain"); });
  WorkloadMetrics metrics(instance, options.version, options.error_rate);
  server.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    const Clock::time_point began = Clock::now();
    if (options.delay_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(options.delay_seconds));
    if (metrics.nextFails()) {
      res.status = 500;
      res.set_content("injected error (--error-rate)\n", "text/plain");
    } else {
      res.status = 200;  // set here: httplib fills it in only after the handler, and it is recorded below
      res.set_content(
          "tide-workload version=" + options.version + " instance=" + instance + " message=" + options.message + "\n",
          "text/plain");
    }
    metrics.record(res.status, secondsSince(began));
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(), "text/plain; version=0.0.4");
  });

  // SIGTERM/SIGINT are taken with sigtimedwait in this thread; blocking them first makes
  // the server's threads inherit the mask, so no handler runs inside them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigset_t previous_mask;
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous_mask);
  signal(SIGPIPE, SIG_IGN);  // a client hanging up mid-reply must not kill the service

  if (port == 0) {
    port = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    std::fprintf(stderr, "tide workload: cannot listen on %s\n", options.listen.c_str());
    pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    return 1;
  }
  server.setListenBacklog();
  say("tide workload " + options.version + " listening on " + host + ":" + std::to_string(port));

  std::thread listener([&server] { server.listen_after_bind(); });
  int exit_code = 0;
  while (true) {
    std::chrono::nanoseconds poll = kSignalPoll;
    if (options.crash_after_seconds) {
      const std::chrono::duration<double> left(*options.crash_after_seconds - secondsSince(started));
      if (left.count() <= 0) {
        say("tide workload: crashing as asked (--crash-after)");
        std::_Exit(kCrashExitCode);
      }
      poll = std::min(poll, std::chrono::ceil<std::chrono::nanoseconds>(left));
    }
    timespec wait{static_cast<time_t>(poll.count() / 1'000'000'000), static_cast<long>(poll.count() % 1'000'000'000)};
    int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) {
      say("tide workload: stopping on signal " + std::to_string(sig));
      break;
    }
    if (!server.is_running()) {
      std::fprintf(stderr, "tide workload: the server stopped unexpectedly\n");
      exit_code = 1;
      break;
    }
  }
  server.stop();
  listener.join();
  pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  return exit_code;
}

}  // namespace

int runWorkload(const WorkloadOptions& options) {
  try {
    return serve(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tide workload: %s\n", e.what());
    return 1;
  }
}

int runWorkloadCli(int argc, char** argv) {
  CLI::App app("A tiny HTTP service for demos and tests: /healthz, /version, / and /metrics", "tide workload");
  WorkloadOptions options;
  double fail_health_after = 0, healthy_after = 0, crash_after = 0;
  app.add_option("--listen", options.listen, "HOST:PORT to serve on")->required();
  app.add_option("--version", options.version, "the text of GET /version")->capture_default_str();
  auto* fail_opt = app.add_option("--fail-health-after", fail_health_after, "/healthz turns 500 after SECONDS")
                       ->check(CLI::NonNegativeNumber);
  auto* healthy_opt = app.add_option("--healthy-after", healthy_after, "/healthz is 503 until SECONDS after start")
                          ->check(CLI::NonNegativeNumber);
  auto* crash_opt =
      app.add_option("--crash-after", crash_after, "exit with status 3 after SECONDS")->check(CLI::NonNegativeNumber);
  app.add_option("--message", options.message, "text included in GET /");
  app.add_option("--error-rate", options.error_rate, "the share of GET / answered 500, from 0 to 1")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--delay", options.delay_seconds, "SECONDS GET / waits before it answers")
      ->check(CLI::Range(0.0, 60.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (fail_opt->count() > 0) options.fail_health_after_seconds = fail_health_after;
  if (healthy_opt->count() > 0) options.healthy_after_seconds = healthy_after;
  if (crash_opt->count() > 0) options.crash_after_seconds = crash_after;
  return runWorkload(options);
}

}  // namespace tide::drivers
