#include "drivers/traffic/haproxy/haproxy_config.h"

#include "drivers/traffic/haproxy/request_log.h"

#include <cctype>
#include <cstdio>
#include <sstream>

namespace tide::drivers::traffic {
namespace {

// A header name or value inside `{ req.hdr(<name>) -m str <value> }`: haproxy's config
// language needs quotes and backslashes escaped inside double quotes.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '$' || c == '#') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string encodeName(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "_%02x", c);
      out += hex;
    }
  }
  return out;
}

std::optional<std::string> decodeName(const std::string& encoded) {
  std::string out;
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '_') {
      out += encoded[i];
      continue;
    }
    if (i + 2 >= encoded.size() || !std::isxdigit(static_cast<unsigned char>(encoded[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(encoded[i + 2]))) {
      return std::nullopt;
    }
    out += static_cast<char>(std::stoi(encoded.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return out;
}

std::string mainBackend(const std::string& plan) { return "be_" + encodeName(plan); }
std::string previewBackend(const std::string& plan) { return "pv_" + encodeName(plan); }

std::optional<std::string> planOfBackend(const std::string& backend, bool* preview) {
  if (backend.size() < 3 || (backend.compare(0, 3, "be_") != 0 && backend.compare(0, 3, "pv_") != 0)) {
    return std::nullopt;
  }
  if (preview != nullptr) *preview = backend[0] == 'p';
  return decodeName(backend.substr(3));
}

std::string serverArguments(const HealthCheckOptions& check, int weight, int max_connections) {
  return "weight " + std::to_string(weight) + " check inter " + std::to_string(check.interval_ms) + " fall " +
         std::to_string(check.fall) + " rise " + std::to_string(check.rise) +
         (max_connections > 0 ? " maxconn " + std::to_string(max_connections) : "");
}

int fileWeight(const BackendServer& server) { return server.drain ? 0 : server.weight; }
int previewWeight(const BackendServer& server) { return server.drain ? 0 : 1; }

std::string renderConfig(const ConfigInput& input) {
  std::ostringstream out;
  out << "# Written by tide (drivers/traffic/haproxy). Rewritten on every change of the desired\n"
         "# traffic; servers and weights also change at runtime over the admin socket.\n"
         "global\n"
         "  stats socket "
      << input.admin_socket
      << " mode 600 level admin expose-fd listeners\n"
         "  stats timeout 30s\n"
         "  maxconn 4000\n";
  if (!input.log_socket.empty()) {
    out << "  log " << input.log_socket << " len 1024 format raw"
        << (input.log_sample > 1 ? " sample 1:" + std::to_string(input.log_sample) : "") << " local0 info\n";
  }
  out << "\n"
         "defaults\n"
         "  mode http\n";
  if (!input.log_socket.empty()) out << "  log global\n  log-format \"" << RequestLog::kLogFormat << "\"\n";
  out << "  option redispatch\n"
         "  retries 3\n"
         // A request a server dropped (refused, or closed with no reply: it crashed or was
         // killed) is sent again to another server; only GET and HEAD, which can be repeated.
         "  retry-on conn-failure empty-response\n"
         // At a seamless reload the old process answers a keep-alive client's next request
         // with "Connection: close" instead of closing the idle connection under it (a client
         // that just sent a request would see the connection reset).
         "  option idle-close-on-response\n"
         "  timeout connect 5s\n"
         "  timeout client 60s\n"
         "  timeout server 60s\n"
         "  timeout http-request 10s\n"
         "  timeout http-keep-alive 10s\n"
         "  timeout queue 30s\n"
         "  timeout check 2s\n"
         "\n"
         "frontend tide_metrics\n"
         "  no log\n"
         "  bind "
      << input.metrics_listen
      << "\n"
         "  http-request use-service prometheus-exporter if { path /metrics }\n"
         "  http-request return status 404 content-type text/plain string \"see /metrics\\n\"\n";
  for (const DesiredPlanTraffic& plan : input.plans) {
    const std::string be = mainBackend(plan.plan);
    const std::string pv = previewBackend(plan.plan);
    out << "\n# plan " << plan.plan << "\n";
    out << "frontend fe_" << encodeName(plan.plan) << "\n  bind " << plan.endpoint.listen << "\n";
    for (const model::HeaderRoute& route : plan.endpoint.header_routes) {
      out << "  use_backend " << pv << " if { req.hdr(" << quoted(route.header) << ") -m str " << quoted(route.value)
          << " }\n";
    }
    out << "  default_backend " << be << "\n";
    if (!plan.endpoint.preview_listen.empty()) {
      out << "\nfrontend pf_" << encodeName(plan.plan) << "\n  bind " << plan.endpoint.preview_listen
          << "\n  default_backend " << pv << "\n";
    }
    for (const bool preview : {false, true}) {
      out << "\nbackend " << (preview ? pv : be) << "\n  balance roundrobin\n"
          << "  http-request disable-l7-retry unless METH_GET\n";
      if (!plan.endpoint.health_path.empty()) out << "  option httpchk GET " << plan.endpoint.health_path << "\n";
      for (const BackendServer& server : plan.servers) {
        if (preview && !server.preview) continue;
        out << "  server " << encodeName(server.id) << " " << server.address << " "
            << serverArguments(input.check, preview ? previewWeight(server) : fileWeight(server),
                               plan.endpoint.max_connections)
            << "\n";
      }
    }
  }
  return out.str();
}

bool splitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string port_text = address.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5) return false;
  for (char c : port_text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  const int value = std::stoi(port_text);
  if (value < 1 || value > 65535) return false;
  std::string host_part = address.substr(0, colon);
  if (host_part.size() >= 2 && host_part.front() == '[' && host_part.back() == ']') {
    host_part = host_part.substr(1, host_part.size() - 2);
  }
  for (char c : host_part) {
    if (std::isspace(static_cast<unsigned char>(c))) return false;
  }
  if (host != nullptr) *host = host_part;
  if (port != nullptr) *port = value;
  return true;
}

}  // namespace tide::drivers::traffic
