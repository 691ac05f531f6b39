#include "drivers/traffic/haproxy/runtime_api.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "host/core/fd.h"

namespace tide::drivers::traffic {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> splitOn(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

std::vector<std::string> splitWords(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

int toInt(const std::string& text, int fallback = 0) {
  try {
    return std::stoi(text);
  } catch (...) {
    return fallback;
  }
}

// Waits until `fd` is ready for `events` or the deadline passes.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(left));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

Result<std::string> runtimeCommand(const std::string& socket_path, const std::string& command,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = "haproxy admin socket " + socket_path;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof address.sun_path) return Status::invalidArgument(where + ": path too long");
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::unavailable(where + ": socket: " + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    // A unix socket connects at once or fails; EAGAIN means its backlog is full.
    return Status::unavailable(where + ": connect: " + std::strerror(errno));
  }
  const std::string request = command + "\n";
  size_t sent = 0;
  while (sent < request.size()) {
    if (!waitFor(fd.get(), POLLOUT, deadline)) return Status::unavailable(where + ": timed out sending \"" + command + "\"");
    const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Status::unavailable(where + ": send: " + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  // Without `prompt`, haproxy answers one command and closes the connection.
  std::string answer;
  char buffer[16384];
  while (true) {
    if (!waitFor(fd.get(), POLLIN, deadline)) return Status::unavailable(where + ": no answer to \"" + command + "\" in time");
    const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Status::unavailable(where + ": recv: " + std::strerror(errno));
    if (n == 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer;
}

Status runtimeAction(const std::string& socket_path, const std::string& command) {
  TIDE_ASSIGN_OR_RETURN(std::string answer, runtimeCommand(socket_path, command));
  const std::string text = trimmed(answer);
  if (text.empty() || text == "New server registered." || text == "Server deleted.") return Status::ok();
  return Status::unprocessable("haproxy refused \"" + command + "\": " + text);
}

std::vector<ServerStateRow> parseServersState(const std::string& text) {
  // Columns: be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight ...
  // srv_port is column 18 (0-based).
  std::vector<ServerStateRow> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> words = splitWords(line);
    if (words.size() < 19) continue;
    ServerStateRow row;
    row.backend = words[1];
    row.server = words[3];
    row.address = words[4] + ":" + words[18];
    row.op_state = toInt(words[5]);
    row.admin_state = toInt(words[6]);
    row.weight = toInt(words[7]);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ServerStatRow> parseShowStat(const std::string& text) {
  std::vector<ServerStatRow> rows;
  std::istringstream in(text);
  std::string line;
  int scur = -1;
  int status = -1;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields = splitOn(line, ',');
    if (line[0] == '#') {
      fields[0] = fields[0].substr(fields[0].find_first_not_of("# "));
      for (size_t i = 0; i < fields.size(); ++i) {
        if (fields[i] == "scur") scur = static_cast<int>(i);
        if (fields[i] == "status") status = static_cast<int>(i);
      }
      continue;
    }
    if (scur < 0 || status < 0 || fields.size() <= static_cast<size_t>(std::max(scur, status))) continue;
    if (fields[1] == "FRONTEND" || fields[1] == "BACKEND") continue;
    rows.push_back({fields[0], fields[1], toInt(fields[static_cast<size_t>(scur)]), fields[static_cast<size_t>(status)]});
  }
  return rows;
}

}  // namespace tide::drivers::traffic
