#include "host/model/traffic.h"

#include <algorithm>
#include <cctype>

namespace tide::model {

std::string trafficAddressProblem(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return "must be host:port, e.g. 127.0.0.1:8080";
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return "port '" + port + "' must be a number between 1 and 65535";
  }
  const int number = std::stoi(port);
  if (number < 1 || number > 65535) return "port " + port + " must be between 1 and 65535";
  if (host == "localhost") return "";
  // Dotted-quad IPv4: four decimal octets 0..255, no leading sign or spaces.
  int octets = 0;
  size_t at = 0;
  while (at <= host.size()) {
    const size_t dot = host.find('.', at);
    const std::string part = host.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (part.empty() || part.size() > 3 ||
        !std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) ||
        std::stoi(part) > 255) {
      return "host '" + host + "' must be an IPv4 address or localhost";
    }
    ++octets;
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (octets != 4) return "host '" + host + "' must be an IPv4 address or localhost";
  return "";
}

void to_json(nlohmann::json& j, const HeaderRoute& v) { j = nlohmann::json{{"header", v.header}, {"value", v.value}}; }

void from_json(const nlohmann::json& j, HeaderRoute& v) {
  v.header = j.value("header", "");
  v.value = j.value("value", "");
}

void to_json(nlohmann::json& j, const PlanTraffic& v) {
  j = nlohmann::json{{"listen", v.listen}, {"drain_seconds", v.drain_seconds}};
  if (!v.preview_listen.empty()) j["preview_listen"] = v.preview_listen;
  if (!v.health_path.empty()) j["health"] = nlohmann::json{{"path", v.health_path}};
  if (!v.header_routes.empty()) j["header_routes"] = v.header_routes;
  if (v.max_connections > 0) j["max_connections"] = v.max_connections;
  if (v.port > 0) j["port"] = v.port;
}

void from_json(const nlohmann::json& j, PlanTraffic& v) {
  v = PlanTraffic{};
  if (!j.is_object()) return;
  v.listen = j.value("listen", "");
  v.preview_listen = j.value("preview_listen", "");
  if (auto h = j.find("health"); h != j.end() && h->is_object()) v.health_path = h->value("path", "");
  v.header_routes = j.value("header_routes", std::vector<HeaderRoute>{});
  v.drain_seconds = j.value("drain_seconds", 10.0);
  v.max_connections = j.value("max_connections", 0);
  v.port = j.value("port", 0);
}

}  // namespace tide::model
