#include "host/api/transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "host/api/errors.h"

namespace tide::api {
namespace {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

// A connection closed while its client may still be sending (refused, headers over the
// limit, a body left unread) reads and drops what arrives for this long before closing:
// closing with unread input resets the connection, and the client would lose the answer.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr size_t kLingerBytes = 1 << 20;
constexpr size_t kReadBufferBytes = 16 * 1024;
// A response's pieces (httplib writes the status line and headers, then the body) are held
// up to this many bytes and sent together, so a small response costs one send.
constexpr size_t kWriteBufferBytes = 16 * 1024;
// The lobby looks for connections past their deadlines at least this often while it holds any.
constexpr std::chrono::milliseconds kLobbySweep{250};
// How long a serving thread waits for a kept-alive connection's next request before it
// gives the connection back to the lobby.
constexpr std::chrono::milliseconds kNextRequestGrace{5};

// Writes to a peer that went away must fail with EPIPE rather than kill the host. Plain
// sockets send with MSG_NOSIGNAL; OpenSSL writes with write(2), hence the mask on the
// connection threads.
void blockSigpipe() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
}

std::string openSslError() {
  unsigned long error = ERR_peek_last_error();
  if (error == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(error, text, sizeof text);
  return text;
}

// An HTTP/1.1 error response the transport writes itself: the answer to a request whose
// head it refused before httplib's parser saw all of it, and the lobby's 503.
std::string rawErrorResponse(const Status& status) {
  const std::string body = errorEnvelope(status);
  const std::string retry = status.code() == Code::kUnavailable ? "Retry-After: 1\r\n" : "";
  return "HTTP/1.1 " + std::to_string(httpStatusOf(status.code())) +
         " \r\nContent-Type: application/json\r\nConnection: close\r\n" + retry +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A character of a token (RFC 9110 5.6.2): a method, a field name.
bool isTokenChar(char c) {
  constexpr std::string_view kTokenSymbols = "!#$%&'*+-.^_`|~";
  return std::isalnum(static_cast<unsigned char>(c)) || kTokenSymbols.find(c) != std::string_view::npos;
}

bool isControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// METHOD SP TARGET SP HTTP/1.0|1.1, the method a token, the target free of white space and
// control characters.
bool wellFormedRequestLine(std::string_view line) {
  const size_t first = line.find(' ');
  const size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == 0 || last == first + 1 || first == last) return false;
  if (!std::ranges::all_of(line.substr(0, first), isTokenChar)) return false;
  if (std::ranges::any_of(line.substr(first + 1, last - first - 1), [](char c) { return c == ' ' || isControl(c); })) {
    return false;
  }
  const std::string_view version = line.substr(last + 1);
  return version == "HTTP/1.1" || version == "HTTP/1.0";
}

// One accepted connection as the Stream httplib's parser reads requests from and writes
// responses to. Reads never wait past the request's deadline, and the bytes of a request
// line and its headers are counted and checked as they are handed out. Between requests
// the lobby (ConnectionPool) owns it and reads its next request head without waiting
// (readWithoutWaiting); a serving thread owns it while it serves a request. Never shared.
class Connection final : public httplib::Stream {
 public:
  struct Timeouts {
    std::chrono::seconds idle_read;   // the longest wait for one piece of a request
    std::chrono::seconds write;       // the longest wait to hand one piece of a response over
    std::chrono::seconds keep_alive;  // the longest wait for the first byte of the next request
  };

  // What readWithoutWaiting() found.
  enum class Head {
    kWaiting,  // not all of it yet: wait for wants()
    kArrived,  // the buffer holds a whole request head (or more than max_header_bytes of one)
    kEnded,    // the client closed the connection or the socket failed
  };

  // Takes ownership of `fd` (non-blocking) and `ssl` (null for plain HTTP).
  Connection(int fd, SSL* ssl, int interrupt_fd, const HttpLimits& limits, Timeouts timeouts)
      : fd_(fd),
        ssl_(ssl),
        interrupt_fd_(interrupt_fd),
        limits_(limits),
        timeouts_(timeouts),
        handshake_until_(SteadyClock::now() + limits.request_read_deadline) {}
  ~Connection() override {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  short wants() const { return wants_; }
  // Waits until readWithoutWaiting() may move on, `until` passes, or the server stops.
  bool awaitInput(Deadline until) const { return wait(wants_, until); }

  // Finishes the TLS handshake and reads what the socket holds, none of it waiting.
  Head readWithoutWaiting() {
    if (ssl_ != nullptr && !handshaken_) {
      ERR_clear_error();
      const int accepted = SSL_accept(ssl_);
      if (accepted <= 0) return tlsWouldBlock(accepted) ? Head::kWaiting : Head::kEnded;
      handshaken_ = true;
    }
    wants_ = POLLIN;
    if (begin_ > 0) {
      in_.erase(0, begin_);
      scanned_ -= std::min(scanned_, begin_);
      begin_ = 0;
    }
    Head head = Head::kWaiting;
    while (head == Head::kWaiting) {
      if (headBuffered()) {
        head = Head::kArrived;
        break;
      }
      const size_t had = in_.size();
      in_.resize(had + 4096);
      ERR_clear_error();
      const ssize_t n =
          ssl_ != nullptr ? SSL_read(ssl_, in_.data() + had, 4096) : ::recv(fd_, in_.data() + had, 4096, 0);
      in_.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n > 0) continue;
      if (ssl_ != nullptr) {
        head = tlsWouldBlock(static_cast<int>(n)) ? Head::kWaiting : Head::kEnded;
        break;
      }
      if (n < 0 && errno == EINTR) continue;
      head = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? Head::kWaiting : Head::kEnded;
      break;
    }
    // The request's deadline counts from its first byte.
    if (!request_until_ && begin_ < in_.size()) request_until_ = SteadyClock::now() + limits_.request_read_deadline;
    return head;
  }

  // The time by which the lobby gives up on this connection: the end of the TLS handshake's
  // time, of the request's (once its first byte came), or of the wait for a next request that
  // began at `idle_since`.
  Deadline lobbyDeadline(Deadline idle_since) const {
    if (ssl_ != nullptr && !handshaken_) return handshake_until_;
    if (request_until_) return *request_until_;
    return idle_since + timeouts_.keep_alive;
  }

  // A new request starts; all of it must be read by the deadline its first byte set.
  void beginRequest() {
    deadline_ = request_until_.value_or(SteadyClock::now() + limits_.request_read_deadline);
    request_until_.reset();
    ++requests_;
    in_headers_ = true;
    header_bytes_ = 0;
    header_lines_ = 0;
    line_.clear();
    framing_ = {};
    header_problem_.clear();
    answered_ = false;
  }
  size_t requests() const { return requests_; }

  // Sends what write() holds. False when the socket failed (then nothing more is sent).
  bool flush() const {
    if (broken_) return false;
    if (out_.empty()) return true;
    const bool sent = send(out_.data(), out_.size());
    out_.clear();
    return sent;
  }

  // One attempt to send `text`, for the lobby, which never waits on a client (a short
  // answer fits an idle socket's send buffer).
  void sendWithoutWaiting(std::string_view text) {
    if (broken_) return;
    ERR_clear_error();
    if (ssl_ != nullptr) {
      (void)SSL_write(ssl_, text.data(), static_cast<int>(text.size()));  // best effort: the 503 of a refusal
    } else {
      (void)::send(fd_, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);  // best effort, as above
    }
  }

  // Ends the response side without waiting: TLS close_notify, then the socket's shutdown.
  // True when the client may still be sending: its input must then be read and dropped
  // (dropInput()) for a while before the connection closes.
  bool finish() {
    if (ssl_ != nullptr && handshaken_ && !broken_) {
      ERR_clear_error();
      SSL_shutdown(ssl_);
    }
    ::shutdown(fd_, lingering_ ? SHUT_WR : SHUT_RDWR);
    return lingering_;
  }

  // Reads and drops what the client sends, without waiting. False once it closed, failed or
  // sent more than a linger takes.
  bool dropInput() {
    std::array<char, 4096> sink;
    while (true) {
      const ssize_t n = ::recv(fd_, sink.data(), sink.size(), 0);
      if (n > 0 && (dropped_ += static_cast<size_t>(n)) <= kLingerBytes) continue;
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }

  void closeAfterResponse() {
    closing_ = true;
    lingering_ = true;
  }
  void lingerAfterResponse() { lingering_ = true; }
  bool closing() const { return closing_; }
  bool headersRefused() const { return !header_problem_.empty(); }
  bool answered() const { return answered_; }
  bool timedOut() const { return timed_out_; }

  std::optional<Status> refusal() const {
    if (!header_problem_.empty()) return Status::invalidArgument(header_problem_, {{"headers", header_problem_, ""}});
    return std::nullopt;
  }

  // Whatever waits for the client sends what is held first: the client may be waiting for it.
  bool is_readable() const override {
    return begin_ < in_.size() || (ssl_ != nullptr && SSL_pending(ssl_) > 0) || (flush() && wait(POLLIN, readUntil()));
  }
  // httplib asks before each piece of a streamed body: what the previous piece left held
  // goes out first.
  bool is_writable() const override { return flush() && wait(POLLOUT, SteadyClock::now() + timeouts_.write); }

  ssize_t read(char* ptr, size_t size) override {
    if (broken_ || !header_problem_.empty()) return -1;
    if (begin_ == in_.size()) {
      // The client may wait for what was written (100 Continue) before it sends more.
      if (!flush()) return -1;
      const Deadline until = readUntil();
      in_.resize(kReadBufferBytes);
      begin_ = 0;
      scanned_ = 0;
      ssize_t n = retry(
          [&] {
            return ssl_ != nullptr ? SSL_read(ssl_, in_.data(), static_cast<int>(in_.size()))
                                   : ::recv(fd_, in_.data(), in_.size(), 0);
          },
          POLLIN, until);
      in_.resize(static_cast<size_t>(std::max<ssize_t>(n, 0)));
      // Past the deadline nothing more is said: a client this slow gets no answer.
      if (n < 0) {
        broken_ = true;
        timed_out_ = SteadyClock::now() >= until;
      }
      if (n <= 0) return n;
    }
    size_t n = std::min(size, in_.size() - begin_);
    if (in_headers_ && !countHeaderBytes(in_.data() + begin_, n)) {
      lingering_ = true;
      return -1;
    }
    std::memcpy(ptr, in_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  // Holds small pieces until flush(): the end of the response, the next read, a streamed
  // body's next piece (is_writable()), or flushConnectionOutput().
  ssize_t write(const char* ptr, size_t size) override {
    if (broken_) return -1;
    answered_ = true;
    if (out_.size() + size <= kWriteBufferBytes) {
      out_.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    // Sent now but for its last byte, which waits in out_ for flush(): no client has a whole
    // answer before the thread that wrote it counts itself free (serve()), so a client that
    // sends its next request at once never finds that thread still counted as serving.
    if (!flush() || (size > 1 && !send(ptr, size - 1))) return -1;
    out_.assign(ptr + size - 1, 1);
    return static_cast<ssize_t>(size);
  }

  // httplib asks for both addresses with every request; they are looked up once.
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    if (!remote_) remote_ = address(::getpeername);
    ip = remote_->ip;
    port = remote_->port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    if (!local_) local_ = address(::getsockname);
    ip = local_->ip;
    port = local_->port;
  }
  socket_t socket() const override { return fd_; }

 private:
  struct Address {
    std::string ip;  // empty when it cannot be told
    int port = 0;
  };

  Deadline readUntil() const { return std::min(deadline_, SteadyClock::now() + timeouts_.idle_read); }

  // Whether what is buffered and not handed out holds a whole request head: it ends at the
  // first empty line (a bare LF ends it too here; the header checks then refuse it), or
  // it is already over the header limit, which the header checks refuse.
  bool headBuffered() {
    if (in_.size() - begin_ > limits_.max_header_bytes) return true;
    const std::string_view unread(in_.data() + begin_, in_.size() - begin_);
    const size_t from = std::max(scanned_, begin_) - begin_;
    for (size_t at = unread.find('\n', from); at != std::string_view::npos; at = unread.find('\n', at + 1)) {
      if (at == 0) continue;  // a stray line end before the request line; the parser refuses it
      if (unread[at - 1] == '\n' || (unread[at - 1] == '\r' && at >= 2 && unread[at - 2] == '\n')) return true;
    }
    scanned_ = in_.size();  // every line end so far was looked at, with what precedes it
    return false;
  }

  // After an SSL call returned `result`: true (and wants_ set) when it only has to wait.
  bool tlsWouldBlock(int result) {
    const int error = SSL_get_error(ssl_, result);
    if (error == SSL_ERROR_WANT_READ) wants_ = POLLIN;
    if (error == SSL_ERROR_WANT_WRITE) wants_ = POLLOUT;
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return true;
    broken_ = true;
    return false;
  }

  // Sends all `size` bytes within the write timeout; false (and the connection broken)
  // when the socket failed or the peer did not take them in time.
  bool send(const char* ptr, size_t size) const {
    const Deadline until = SteadyClock::now() + timeouts_.write;
    for (size_t done = 0; done < size;) {
      const size_t left = size - done;
      ssize_t n = retry(
          [&] {
            return ssl_ != nullptr ? SSL_write(ssl_, ptr + done, static_cast<int>(std::min<size_t>(left, INT_MAX)))
                                   : ::send(fd_, ptr + done, left, MSG_NOSIGNAL);
          },
          POLLOUT, until);
      if (n <= 0) {
        broken_ = true;
        return false;
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Waits until the socket is ready for `events`; false when `until` passed or
  // interruptConnections() ran. A socket in error counts as ready: the next call reports it.
  bool wait(short events, Deadline until) const {
    while (true) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(until - SteadyClock::now());
      if (left.count() <= 0) return false;
      pollfd fds[2] = {{fd_, events, 0}, {interrupt_fd_, POLLIN, 0}};
      int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
      if (ready < 0 && errno != EINTR) return false;
      if (ready <= 0) continue;
      if (fds[1].revents != 0) return false;
      return true;
    }
  }

  // Runs `attempt` (one recv, send, SSL_read or SSL_write) until it moves bytes, waiting on
  // the socket in between. 0 for a clean end of input; -1 when the socket failed, the peer
  // went away, or `until` passed.
  template <class Attempt>
  ssize_t retry(Attempt attempt, short events, Deadline until) const {
    while (true) {
      ERR_clear_error();
      const ssize_t n = attempt();
      if (n > 0) return n;
      short want = events;
      if (ssl_ != nullptr) {
        const int error = SSL_get_error(ssl_, static_cast<int>(n));
        if (error == SSL_ERROR_ZERO_RETURN) return 0;
        if (error == SSL_ERROR_WANT_READ) {
          want = POLLIN;
        } else if (error == SSL_ERROR_WANT_WRITE) {
          want = POLLOUT;
        } else {
          return -1;
        }
      } else if (n == 0) {
        return 0;
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return -1;
      }
      if (!wait(want, until)) return -1;
    }
  }

  // Counts the request line and headers as httplib takes them and checks their framing;
  // false (and the problem recorded for refusal()) once they pass a limit or are malformed.
  bool countHeaderBytes(const char* data, size_t size) {
    for (size_t i = 0; i < size && in_headers_ && header_problem_.empty(); ++i) {
      ++header_bytes_;
      if (data[i] != '\n') {
        if (line_.size() < limits_.max_header_bytes) line_.push_back(data[i]);
        continue;
      }
      if (header_bytes_ > limits_.max_header_bytes) break;
      // httplib skips a line that ends in a bare LF (and reads on past a bare empty line)
      // where a proxy may take it: refused, so both read the same headers.
      if (line_.empty() || line_.back() != '\r') {
        header_problem_ = "line " + std::to_string(header_lines_ + 1) +
                          " of the request ends in a bare LF; lines end in CRLF (RFC 9112 2.2)";
        break;
      }
      line_.pop_back();
      // An empty line after the request line ends the headers.
      if (line_.empty() && header_lines_ > 0) {
        in_headers_ = false;
        checkFraming();
      } else {
        checkHeaderLine(line_, header_lines_);
      }
      if (in_headers_) ++header_lines_;
      line_.clear();
    }
    if (header_bytes_ > limits_.max_header_bytes) {
      header_problem_ = "the request line and headers are larger than the limit of " +
                        std::to_string(limits_.max_header_bytes) + " bytes (limits.max_header_bytes)";
    } else if (header_lines_ > limits_.max_headers + 1) {
      header_problem_ = "the request has more than the limit of " + std::to_string(limits_.max_headers) +
                        " header fields (limits.max_headers)";
    }
    return header_problem_.empty();
  }

  // Refuses what a proxy in front of tide could read differently (request smuggling, RFC
  // 9112 6.1 and 6.3): a request line that is not METHOD SP TARGET SP HTTP/1.x; a field line
  // without a token name and a colon, with white space before the colon, folded onto the
  // next line, or with a control character (a bare CR among them); Content-Length given
  // twice with different values or not a number; Transfer-Encoding given twice or other than
  // "chunked" (httplib reads no body for any other value, percent-decoded, in its first field).
  void checkHeaderLine(const std::string& line, size_t index) {
    if (index == 0) {
      if (!wellFormedRequestLine(line)) header_problem_ = "malformed request line";
      http10_ = line.ends_with(" HTTP/1.0");
      return;
    }
    const std::string where = "header line " + std::to_string(index);
    const size_t colon = line.find(':');
    if (line.empty() || line[0] == ' ' || line[0] == '\t') {
      header_problem_ = where + " is folded onto the previous one or empty (obsolete line folding is refused)";
      return;
    }
    if (colon == std::string::npos || colon == 0) {
      header_problem_ = where + " has no field name and colon";
      return;
    }
    const std::string name = line.substr(0, colon);
    if (name.find_first_of(" \t") != std::string::npos) {
      header_problem_ = where + ": white space between the field name and the colon";
      return;
    }
    if (!std::ranges::all_of(name, isTokenChar)) {
      header_problem_ = where + ": the field name is not a token";
      return;
    }
    if (std::ranges::any_of(line, [](char c) { return c != '\t' && isControl(c); })) {
      header_problem_ = where + " has a control character (a bare CR, NUL, ...) in its value";
      return;
    }
    std::string value = line.substr(colon + 1);
    const size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first, value.find_last_not_of(" \t") - first + 1);
    if (strcasecmp(name.c_str(), "Transfer-Encoding") == 0) {
      if (framing_.transfer_encoding) {
        header_problem_ = "Transfer-Encoding is given twice";
      } else if (strcasecmp(value.c_str(), "chunked") != 0) {
        header_problem_ = "Transfer-Encoding '" + value.substr(0, 64) + "': tide reads only 'chunked'";
      }
      framing_.transfer_encoding = true;
    } else if (strcasecmp(name.c_str(), "Content-Length") == 0) {
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
        header_problem_ = "Content-Length is not a number";
      } else if (framing_.content_length && *framing_.content_length != value) {
        header_problem_ = "Content-Length is given twice with different values";
      } else {
        framing_.content_length = value;
      }
    }
  }

  // Once the headers ended: what the fields say together.
  void checkFraming() {
    if (!framing_.transfer_encoding) return;
    if (framing_.content_length) {
      header_problem_ = "the request has both Transfer-Encoding and Content-Length (RFC 9112 6.1)";
    } else if (http10_) {
      header_problem_ = "an HTTP/1.0 request has Transfer-Encoding (RFC 9112 6.1)";
    }
  }

  Address address(int (*name)(int, sockaddr*, socklen_t*)) const {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    if (name(fd_, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return {};
    char host[NI_MAXHOST];
    char service[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&storage), length, host, sizeof host, service, sizeof service,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
      return {};
    }
    return {host, std::atoi(service)};
  }

  const int fd_;
  SSL* const ssl_;
  const int interrupt_fd_;
  const HttpLimits& limits_;
  const Timeouts timeouts_;
  const Deadline handshake_until_;

  // in_[begin_, end) is read but not handed out yet; the line ends in in_[0, scanned_) end no head.
  std::string in_;
  size_t begin_ = 0;
  size_t scanned_ = 0;
  // Written but not sent yet. Mutable, like broken_, because httplib's is_writable() is
  // const and flushes.
  mutable std::string out_;
  mutable std::optional<Address> remote_, local_;
  bool handshaken_ = false;                // TLS: SSL_accept finished
  short wants_ = POLLIN;                   // what readWithoutWaiting() waits for
  std::optional<Deadline> request_until_;  // the next request's deadline, set by its first byte
  size_t requests_ = 0;                    // begun on this connection
  size_t dropped_ = 0;                     // input dropped while lingering
  Deadline deadline_ = Deadline::max();
  bool in_headers_ = false;
  bool http10_ = false;  // the request line says HTTP/1.0
  size_t header_bytes_ = 0;
  size_t header_lines_ = 0;  // complete lines so far, the request line included
  std::string line_;         // the line being read, up to max_header_bytes
  struct Framing {
    bool transfer_encoding = false;             // Transfer-Encoding was given
    std::optional<std::string> content_length;  // the Content-Length given
  } framing_;
  std::string header_problem_;
  bool answered_ = false;        // this request's response (or part of it) was written
  mutable bool broken_ = false;  // the socket failed or a deadline passed: nothing more is sent
  bool timed_out_ = false;       // a read deadline passed
  bool closing_ = false;         // the server asked to close after this response
  bool lingering_ = false;       // the client may still be sending when the connection closes
};

thread_local Connection* t_connection = nullptr;

// Where a connection stays when it enters the lobby.
enum class Stay {
  kNew,        // just accepted
  kKeptAlive,  // served, and kept alive for its next request
  kLingering,  // closed for writing; its client may still be sending
};

// The connections of one GuardedServer and the threads that serve them.
//
// httplib's accept loop hands each new connection to its TaskQueue as a task that calls
// process_and_close_socket(); enqueue() runs that task at once on the accepting thread, and
// GuardedServer gives the socket to admit().
//
// A connection whose next request head has not arrived whole waits in the lobby: one thread
// over epoll that reads heads without waiting for any client. New connections, kept-alive
// ones between requests and ones whose client is slow to send its headers all wait there,
// holding no serving thread, so connections that never finish their headers take nothing a
// client behind them needs. A connection whose head has arrived goes to one of
// `max_connections` serving threads; with all of them busy, the lobby answers it 503 at
// once. The lobby takes at most `max_waiting_connections` new connections; past that a new
// one is closed at once, unanswered. A connection closed while its client may still be
// sending lingers in the lobby too. Its deadlines: Connection::lobbyDeadline, kLingerTime.
class ConnectionPool final : public httplib::TaskQueue {
 public:
  // httplib's parser and routing, for one request.
  using ProcessRequest = std::function<bool(Connection&, bool last, bool& closed_by_client)>;
  struct Setup {
    const HttpLimits& limits;  // must outlive the pool
    Connection::Timeouts timeouts;
    size_t keep_alive_max_count;  // requests one connection may carry
    int interrupt_fd;             // readable once the server's connections must end
    ConnectionEvents events;
    ProcessRequest process_request;
    std::function<bool()> listening;  // false once the server stops
  };

  explicit ConnectionPool(Setup setup)
      : setup_(std::move(setup)),
        epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
        wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    // Should either fail (no memory or file descriptors left), the lobby ends at once and
    // every connection is closed unanswered: the host runs on without an API.
    epoll_event wake{EPOLLIN, {.ptr = &wake_marker_}};
    epoll_event interrupt{EPOLLIN, {.ptr = &interrupt_marker_}};
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);                  // see above
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, setup_.interrupt_fd, &interrupt);  // see above
    lobby_ = std::thread([this] { runLobby(); });
    for (size_t i = 0; i < setup_.limits.max_connections; ++i) workers_.emplace_back([this] { runWorker(); });
  }
  ~ConnectionPool() override {
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  void enqueue(std::function<void()> task) override {
    accepting_ = this;
    task();
    accepting_ = nullptr;
  }

  // Ends the lobby (closing what waits there) and joins the threads once their connections end.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake();
    ready_cv_.notify_all();
    lobby_.join();
    for (std::thread& worker : workers_) worker.join();
    std::lock_guard<std::mutex> lock(mu_);
    ready_.clear();
  }

  // The pool whose enqueue() runs on this thread now, if any.
  static ConnectionPool* accepting() { return accepting_; }

  // Takes a just accepted socket (non-blocking) and its TLS session (null for plain HTTP).
  void admit(int fd, SSL* ssl) {
    hold(std::make_unique<Connection>(fd, ssl, setup_.interrupt_fd, setup_.limits, setup_.timeouts), Stay::kNew);
  }

 private:
  struct Entry {
    std::unique_ptr<Connection> connection;
    Deadline since;  // when it entered the lobby
    Deadline until;  // when the lobby closes it
    bool lingering = false;
  };

  void hold(std::unique_ptr<Connection> connection, Stay stay) {
    const Deadline now = SteadyClock::now();
    Connection& held = *connection;
    const Deadline until = stay == Stay::kLingering ? now + kLingerTime : held.lobbyDeadline(now);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;  // the server stops: `connection` closes as it goes
      if (stay == Stay::kNew && entries_.size() >= setup_.limits.max_waiting_connections) {
        connection.reset();
        if (setup_.events.dropped) setup_.events.dropped();
        return;
      }
      if (entries_.empty()) wake();  // the lobby may sleep without a deadline
      entries_.emplace(&held, Entry{std::move(connection), now, until, stay == Stay::kLingering});
      arm(held, stay == Stay::kLingering ? POLLIN : held.wants());
    }
  }

  // Asks epoll for one event of `wants` on `connection`. REQUIRES: mu_ is held and the lobby
  // holds `connection` (a connection it does not hold is never armed).
  void arm(const Connection& connection, short wants) {
    epoll_event event{};
    event.events = (wants == POLLOUT ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT;
    event.data.ptr = const_cast<Connection*>(&connection);
    // Failing both (no memory), the connection waits unwatched until its deadline.
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, connection.fd(), &event) != 0 && errno == ENOENT) {
      (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection.fd(), &event);  // see above
    }
  }

  void wake() {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);  // a full counter wakes the lobby just as well
  }

  void runLobby() {
    blockSigpipe();  // the 503 of a TLS connection is written with write(2)
    std::array<epoll_event, 64> events;
    Deadline next_sweep = SteadyClock::now() + kLobbySweep;
    while (true) {
      int timeout = -1;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) break;
        if (!entries_.empty()) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_sweep - SteadyClock::now());
          timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, kLobbySweep.count()));
        }
      }
      const int ready = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout);
      if (ready < 0 && errno != EINTR) break;
      bool interrupted = false;
      for (int i = 0; i < ready; ++i) {
        void* target = events[i].data.ptr;
        if (target == &wake_marker_) {
          uint64_t count;
          (void)!::read(wake_fd_, &count, sizeof count);  // only resets the wake-up
        } else if (target == &interrupt_marker_) {
          interrupted = true;
        } else {
          step(static_cast<Connection*>(target));
        }
      }
      if (interrupted) break;
      if (SteadyClock::now() >= next_sweep) next_sweep = sweep();
    }
    std::unordered_map<Connection*, Entry> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      left.swap(entries_);
    }
  }

  // What the lobby does when `key`'s socket is ready.
  void step(Connection* key) {
    Entry* entry = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = entries_.find(key);
      if (it == entries_.end()) return;
      entry = &it->second;  // only this thread erases it
    }
    Connection& connection = *entry->connection;
    if (entry->lingering) {
      if (!connection.dropInput()) return remove(key);
      std::lock_guard<std::mutex> lock(mu_);
      return arm(connection, POLLIN);
    }
    switch (connection.readWithoutWaiting()) {
      case Connection::Head::kEnded: return remove(key);
      case Connection::Head::kWaiting: {
        std::lock_guard<std::mutex> lock(mu_);
        entry->until = connection.lobbyDeadline(entry->since);
        return arm(connection, connection.wants());
      }
      case Connection::Head::kArrived: break;
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Only threads inside a request count: one that has answered and waits out its grace
      // for a kept-alive connection's next request, or is handing its connection back, leaves
      // it for a head that has arrived (within kNextRequestGrace).
      if (serving_ + ready_.size() < workers_.size()) {
        ready_.push_back(std::move(entry->connection));
        entries_.erase(key);
        lock.unlock();
        ready_cv_.notify_one();
        return;
      }
    }
    // Every serving thread is busy: answered now, without a thread, and closed.
    connection.sendWithoutWaiting(rawErrorResponse(
        Status::unavailable("tide is serving its limit of " + std::to_string(setup_.limits.max_connections) +
                            " connections (limits.max_connections); try again shortly")));
    connection.lingerAfterResponse();
    connection.finish();
    {
      std::lock_guard<std::mutex> lock(mu_);
      entry->lingering = true;
      entry->until = SteadyClock::now() + kLingerTime;
      arm(connection, POLLIN);
    }
    if (setup_.events.refused) setup_.events.refused();
  }

  void remove(Connection* key) {
    std::unique_ptr<Connection> gone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = entries_.find(key);
      if (it == entries_.end()) return;
      gone = std::move(it->second.connection);
      entries_.erase(it);
    }
    discard(std::move(gone));
  }

  // Closes a connection the lobby held. Its socket leaves the epoll set first: a copy of
  // the descriptor in a child forked meanwhile would otherwise keep it there, maybe armed.
  void discard(std::unique_ptr<Connection> connection) {
    (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection->fd(), nullptr);  // gone already is fine
  }

  // Closes the connections past their deadlines; returns when to look again.
  Deadline sweep() {
    const Deadline now = SteadyClock::now();
    Deadline next = now + kLobbySweep;
    std::vector<std::unique_ptr<Connection>> expired;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->second.until <= now) {
          expired.push_back(std::move(it->second.connection));
          it = entries_.erase(it);
        } else {
          next = std::min(next, it->second.until);
          ++it;
        }
      }
    }
    for (std::unique_ptr<Connection>& connection : expired) discard(std::move(connection));
    return next;
  }

  void runWorker() {
    blockSigpipe();
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      ready_cv_.wait(lock, [&] { return !ready_.empty() || stopping_; });
      if (stopping_) return;
      std::unique_ptr<Connection> connection = std::move(ready_.front());
      ready_.pop_front();
      ++serving_;  // counted down once the request is answered (leaveServing())
      t_serving = this;
      lock.unlock();
      serve(std::move(connection));
      lock.lock();
    }
  }

  // Serves requests on `connection` while their heads are at hand, then gives it back to
  // the lobby (kept alive, or lingering) or closes it.
  void serve(std::unique_ptr<Connection> connection) {
    Connection& served = *connection;
    t_connection = &served;
    bool kept_alive = false;
    while (true) {
      served.beginRequest();
      const bool last = served.requests() >= setup_.keep_alive_max_count;
      bool closed_by_client = false;
      bool ok = setup_.process_request(served, last, closed_by_client);
      leaveServing();  // if the access log did not already, as the answer was complete
      ok = ok && served.flush();
      if (served.headersRefused()) {
        if (!served.answered()) {
          const std::string answer = rawErrorResponse(*served.refusal());
          served.write(answer.data(), answer.size());
          served.flush();
        }
        break;
      }
      if (!ok || closed_by_client || last || served.closing() || !setup_.listening()) break;
      // A client reusing its connection sends its next request at once: waited for here,
      // briefly, it skips the hand-over through the lobby (a third of the throughput of small
      // requests). Only briefly, and not while a request waits for a thread, so a slow client
      // keeps no thread this way.
      Connection::Head next = served.readWithoutWaiting();
      if (next == Connection::Head::kWaiting) next = awaitNextRequest(served);
      if (next == Connection::Head::kArrived && queueBehindWaiting(connection)) {
        t_connection = nullptr;
        return;
      }
      if (next == Connection::Head::kEnded) break;
      if (next == Connection::Head::kWaiting) {
        kept_alive = true;
        break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++serving_;  // its next request, on this thread
      t_serving = this;
    }
    t_connection = nullptr;
    if (kept_alive) {
      hold(std::move(connection), Stay::kKeptAlive);
    } else if (served.finish()) {
      hold(std::move(connection), Stay::kLingering);
    }
  }

  // With heads waiting for a thread, `connection` (whose next head has arrived too) queues
  // behind them rather than keep its thread, so one busy client cannot starve the others.
  bool queueBehindWaiting(std::unique_ptr<Connection>& connection) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready_.empty()) return false;
    ready_.push_back(std::move(connection));
    return true;
  }

  // Waits up to kNextRequestGrace for the rest of `connection`'s next request head, while no
  // arrived head waits for a thread.
  Connection::Head awaitNextRequest(Connection& connection) {
    const Deadline until = SteadyClock::now() + kNextRequestGrace;
    std::unique_lock<std::mutex> lock(mu_);
    Connection::Head next = Connection::Head::kWaiting;
    while (next == Connection::Head::kWaiting && ready_.empty()) {
      lock.unlock();
      const bool ready = connection.awaitInput(until);
      if (ready) next = connection.readWithoutWaiting();
      lock.lock();
      if (!ready) break;
    }
    return next;
  }

  static thread_local ConnectionPool* accepting_;

 public:
  // The pool this thread counts itself serving a request in (serving_), until the request
  // is answered.
  static thread_local ConnectionPool* t_serving;

  // Counts this thread out of serving_ once its request is answered: before the answer's
  // last bytes leave (write() holds them back), so a client that has its answer and sends
  // another request at once finds this thread free, not "serving its limit".
  static void leaveServing() {
    ConnectionPool* pool = std::exchange(t_serving, nullptr);
    if (pool == nullptr) return;
    std::lock_guard<std::mutex> lock(pool->mu_);
    --pool->serving_;
  }

 private:
  const Setup setup_;
  const int epoll_fd_;
  const int wake_fd_;
  // Their addresses mark the events of the wake-up and interrupt fds.
  char wake_marker_ = 0;
  char interrupt_marker_ = 0;
  std::thread lobby_;
  std::vector<std::thread> workers_;

  std::mutex mu_;
  std::condition_variable ready_cv_;
  // The lobby's connections. Only the lobby thread erases one.
  std::unordered_map<Connection*, Entry> entries_;  // REQUIRES: mu_ is held
  std::deque<std::unique_ptr<Connection>> ready_;   // REQUIRES: mu_ is held; heads arrived
  // Threads inside a request, from taking its head to having written its answer (not those
  // waiting out a grace or handing a connection back). REQUIRES: mu_ is held.
  size_t serving_ = 0;
  bool stopping_ = false;                           // REQUIRES: mu_ is held
  bool closed_ = false;                             // REQUIRES: mu_ is held; the lobby ended
};

thread_local ConnectionPool* ConnectionPool::accepting_ = nullptr;
thread_local ConnectionPool* ConnectionPool::t_serving = nullptr;

}  // namespace

class GuardedServer::Tls {
 public:
  static Result<std::unique_ptr<Tls>> load(const TlsFiles& files) {
    if (files.cert.empty() || files.key.empty()) {
      return Status::invalidArgument("tls.cert and tls.key must be given together");
    }
    ERR_clear_error();
    SSL_CTX* context = SSL_CTX_new(TLS_server_method());
    if (context == nullptr) return Status::internal("cannot create a TLS context: " + openSslError());
    auto tls = std::unique_ptr<Tls>(new Tls(context));
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(context, files.cert.c_str()) != 1) {
      return Status::invalidArgument("tls.cert: cannot load a PEM certificate from " + files.cert + ": " +
                                     openSslError());
    }
    // OpenSSL checks the key against the certificate as it loads it.
    if (SSL_CTX_use_PrivateKey_file(context, files.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(context) != 1) {
      if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
        return Status::invalidArgument("tls.key " + files.key + " is not the key of the certificate in " + files.cert);
      }
      return Status::invalidArgument("tls.key: cannot load a PEM private key from " + files.key + ": " +
                                     openSslError());
    }
    return tls;
  }
  ~Tls() { SSL_CTX_free(context_); }

  // A server session on `fd`; null when OpenSSL cannot make one.
  SSL* session(int fd) const {
    SSL* ssl = SSL_new(context_);
    if (ssl != nullptr && SSL_set_fd(ssl, fd) != 1) {
      SSL_free(ssl);
      return nullptr;
    }
    return ssl;
  }

 private:
  explicit Tls(SSL_CTX* context) : context_(context) {}
  SSL_CTX* const context_;
};

Result<std::unique_ptr<GuardedServer>> GuardedServer::create(const HttpLimits& limits, const TlsFiles& tls,
                                                             ConnectionEvents events) {
  std::unique_ptr<Tls> context;
  if (tls.enabled()) {
    TIDE_ASSIGN_OR_RETURN(context, Tls::load(tls));
  }
  return std::unique_ptr<GuardedServer>(new GuardedServer(limits, std::move(context), std::move(events)));
}

GuardedServer::GuardedServer(const HttpLimits& limits, std::unique_ptr<Tls> tls, ConnectionEvents events)
    : limits_(limits), tls_(std::move(tls)), interrupt_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  // Made by listen_after_bind(), once configure() set the timeouts.
  new_task_queue = [this, events = std::move(events)] {
    return new ConnectionPool({limits_,
                               {std::chrono::seconds(read_timeout_sec_), std::chrono::seconds(write_timeout_sec_),
                                std::chrono::seconds(keep_alive_timeout_sec_)},
                               keep_alive_max_count_,
                               interrupt_fd_,
                               events,
                               [this](Connection& connection, bool last, bool& closed_by_client) {
                                 return process_request(connection, last, closed_by_client, nullptr);
                               },
                               [this] { return svr_sock_ != INVALID_SOCKET; }});
  };
}

GuardedServer::~GuardedServer() {
  if (interrupt_fd_ >= 0) ::close(interrupt_fd_);
}

void GuardedServer::interruptConnections() {
  const uint64_t one = 1;
  // Cannot fail but when the eventfd's counter is full, which wakes the readers just as well.
  (void)!::write(interrupt_fd_, &one, sizeof one);
}

// Runs on the accepting thread, inside ConnectionPool::enqueue().
bool GuardedServer::process_and_close_socket(socket_t sock) {
  ConnectionPool* pool = ConnectionPool::accepting();
  SSL* ssl = nullptr;
  if (pool == nullptr || (tls_ != nullptr && (ssl = tls_->session(sock)) == nullptr)) {
    ::close(sock);
    return false;
  }
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  // httplib accepts without SOCK_CLOEXEC; a workload the process driver starts must not
  // inherit API connections.
  ::fcntl(sock, F_SETFD, FD_CLOEXEC);
  pool->admit(sock, ssl);
  return true;
}

std::optional<Status> connectionRefusal() { return t_connection != nullptr ? t_connection->refusal() : std::nullopt; }

void closeConnectionAfterResponse() {
  if (t_connection != nullptr) t_connection->closeAfterResponse();
}

bool flushConnectionOutput() { return t_connection == nullptr || t_connection->flush(); }

bool sendCompleteAnswer() {
  ConnectionPool::leaveServing();
  return flushConnectionOutput();
}

bool connectionTimedOut() { return t_connection != nullptr && t_connection->timedOut(); }

}  // namespace tide::api
