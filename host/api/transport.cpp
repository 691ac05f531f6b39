#include "host/api/transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <condition_variable>
#include <cctype>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "host/api/errors.h"

namespace tide::api {
namespace {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

// Threads that answer the connections over the cap, each answer bounded by
// kRefusalDeadline, so refusing stays cheap whatever the refused clients do.
constexpr size_t kRefusingThreads = 2;
constexpr std::chrono::milliseconds kRefusalDeadline{2000};
// A connection closed while its client may still be sending (refused, headers over the
// limit, a body left unread) reads and drops what arrives for this long before closing:
// closing with unread input resets the connection, and the client would lose the answer.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr size_t kLingerBytes = 1 << 20;
constexpr size_t kReadBufferBytes = 16 * 1024;
// A response's pieces (httplib writes the status line and headers, then the body) are held
// up to this many bytes and sent together, so a small response costs one send.
constexpr size_t kWriteBufferBytes = 16 * 1024;

// Set on the refusing threads for their whole life.
thread_local bool t_refusing = false;
// Set while a connection beyond the refusal backlog is closed unanswered.
thread_local bool t_dropping = false;

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

// An HTTP/1.1 error response for when httplib will not write one (a request line that
// overflows the header limit never reaches its parser's error path).
std::string rawErrorResponse(const Status& status) {
  const std::string body = errorEnvelope(status);
  return "HTTP/1.1 " + std::to_string(httpStatusOf(status.code())) +
         " \r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
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

// httplib hands every accepted connection to a TaskQueue. This one serves at most `workers`
// connections at once and gives the rest to the refusing threads, which answer 503; past
// `refusal_backlog` waiting for those, it closes a connection at once on the accepting
// thread. (This httplib's enqueue() cannot decline: the task owns the socket, so it must
// run somewhere.)
class ConnectionQueue final : public httplib::TaskQueue {
 public:
  ConnectionQueue(size_t workers, size_t refusal_backlog, std::function<void()> on_dropped)
      : workers_(workers), refusal_backlog_(refusal_backlog), on_dropped_(std::move(on_dropped)) {
    for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { run(serving_, serving_ready_, false); });
    for (size_t i = 0; i < kRefusingThreads; ++i) {
      threads_.emplace_back([this] { run(refusing_, refusing_ready_, true); });
    }
  }

  void enqueue(std::function<void()> task) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (busy_ + serving_.size() < workers_) {
      serving_.push_back(std::move(task));
      lock.unlock();
      serving_ready_.notify_one();
    } else if (refusing_busy_ + refusing_.size() < kRefusingThreads + refusal_backlog_) {
      refusing_.push_back(std::move(task));
      lock.unlock();
      refusing_ready_.notify_one();
    } else {
      lock.unlock();
      if (on_dropped_) on_dropped_();
      t_dropping = true;
      task();
      t_dropping = false;
    }
  }

  // Runs what is queued (each task closes its socket), then joins the threads.
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    serving_ready_.notify_all();
    refusing_ready_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

 private:
  using Task = std::function<void()>;

  void run(std::deque<Task>& queue, std::condition_variable& ready, bool refusing) {
    blockSigpipe();
    t_refusing = refusing;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      ready.wait(lock, [&] { return !queue.empty() || stopping_; });
      if (queue.empty()) return;
      Task task = std::move(queue.front());
      queue.pop_front();
      ++(refusing ? refusing_busy_ : busy_);
      lock.unlock();
      task();
      lock.lock();
      --(refusing ? refusing_busy_ : busy_);
    }
  }

  const size_t workers_;
  const size_t refusal_backlog_;
  const std::function<void()> on_dropped_;
  std::mutex mu_;
  std::condition_variable serving_ready_;
  std::condition_variable refusing_ready_;
  std::deque<Task> serving_;   // REQUIRES: mu_ is held
  std::deque<Task> refusing_;  // REQUIRES: mu_ is held
  size_t busy_ = 0;            // REQUIRES: mu_ is held
  size_t refusing_busy_ = 0;   // REQUIRES: mu_ is held
  bool stopping_ = false;      // REQUIRES: mu_ is held
  std::vector<std::thread> threads_;
};

// One accepted connection as the Stream httplib's parser reads requests from and writes
// responses to. Reads never wait past the request's deadline, and the bytes of a request
// line and its headers are counted as they are handed out. Owned by the thread serving it.
class Connection final : public httplib::Stream {
 public:
  struct Timeouts {
    std::chrono::seconds idle_read;  // the longest wait for one piece of a request
    std::chrono::seconds write;      // the longest wait to hand one piece of a response over
  };

  // Takes ownership of `fd` (non-blocking) and `ssl` (null for plain HTTP).
  Connection(int fd, SSL* ssl, int interrupt_fd, const HttpLimits& limits, Timeouts timeouts, bool refusing)
      : fd_(fd), ssl_(ssl), interrupt_fd_(interrupt_fd), limits_(limits), timeouts_(timeouts), refusing_(refusing) {}
  ~Connection() override {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The TLS handshake, when there is TLS; it must end by `until`.
  bool handshake(Deadline until) {
    if (ssl_ == nullptr) return true;
    if (retry([&] { return SSL_accept(ssl_); }, POLLIN, until) > 0) return true;
    broken_ = true;
    return false;
  }

  // Waits up to `idle` for the first byte of the next request.
  bool awaitRequest(std::chrono::seconds idle) {
    if (!flush() || closing_) return false;
    if (begin_ < end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) return true;
    return wait(POLLIN, SteadyClock::now() + idle);
  }

  // A new request starts: all of it must be read by `until`.
  void beginRequest(Deadline until) {
    deadline_ = until;
    in_headers_ = true;
    header_bytes_ = 0;
    header_lines_ = 0;
    line_.clear();
    framing_ = {};
    answered_ = false;
  }

  // Sends what write() holds. False when the socket failed (then nothing more is sent).
  bool flush() const {
    if (broken_) return false;
    if (out_.empty()) return true;
    const bool sent = send(out_.data(), out_.size());
    out_.clear();
    return sent;
  }

  // Ends the connection: TLS close_notify, a linger when the client may still be sending.
  void close() {
    flush();
    if (ssl_ != nullptr && !broken_) {
      ERR_clear_error();
      SSL_shutdown(ssl_);
    }
    if (!lingering_) {
      ::shutdown(fd_, SHUT_RDWR);
      return;
    }
    ::shutdown(fd_, SHUT_WR);
    const Deadline until = SteadyClock::now() + kLingerTime;
    std::array<char, 4096> sink;
    for (size_t dropped = 0; dropped < kLingerBytes && wait(POLLIN, until);) {
      ssize_t n = ::recv(fd_, sink.data(), sink.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
      if (n > 0) dropped += static_cast<size_t>(n);
    }
  }

  void closeAfterResponse() {
    closing_ = true;
    lingering_ = true;
  }
  bool closing() const { return closing_; }
  bool headersRefused() const { return !header_problem_.empty(); }
  bool answered() const { return answered_; }
  bool timedOut() const { return timed_out_; }

  std::optional<Status> refusal() const {
    if (refusing_) {
      return Status::unavailable("tide is serving its limit of " + std::to_string(limits_.max_connections) +
                                 " connections (limits.max_connections); try again shortly");
    }
    if (!header_problem_.empty()) return Status::invalidArgument(header_problem_, {{"headers", header_problem_, ""}});
    return std::nullopt;
  }

  // Whatever waits for the client sends what is held first: the client may be waiting for it.
  bool is_readable() const override {
    return begin_ < end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0) || (flush() && wait(POLLIN, readUntil()));
  }
  // httplib asks before each piece of a streamed body: what the previous piece left held
  // goes out first.
  bool is_writable() const override { return flush() && wait(POLLOUT, SteadyClock::now() + timeouts_.write); }

  ssize_t read(char* ptr, size_t size) override {
    if (broken_ || !header_problem_.empty()) return -1;
    if (begin_ == end_) {
      // The client may wait for what was written (100 Continue) before it sends more.
      if (!flush()) return -1;
      const Deadline until = readUntil();
      ssize_t n = retry(
          [&] {
            return ssl_ != nullptr ? SSL_read(ssl_, buffer_.data(), static_cast<int>(buffer_.size()))
                                   : ::recv(fd_, buffer_.data(), buffer_.size(), 0);
          },
          POLLIN, until);
      // Past the deadline nothing more is said: a client this slow gets no answer.
      if (n < 0) {
        broken_ = true;
        timed_out_ = SteadyClock::now() >= until;
      }
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, end_ - begin_);
    if (in_headers_ && !countHeaderBytes(buffer_.data() + begin_, n)) {
      lingering_ = true;
      return -1;
    }
    std::memcpy(ptr, buffer_.data() + begin_, n);
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
    if (!flush() || !send(ptr, size)) return -1;
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

  // Runs `attempt` (one recv, send, SSL_read, SSL_write or SSL_accept) until it moves
  // bytes, waiting on the socket in between. 0 for a clean end of input; -1 when the
  // socket failed, the peer went away, or `until` passed.
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
  const bool refusing_;

  std::array<char, kReadBufferBytes> buffer_;
  size_t begin_ = 0;  // buffer_[begin_, end_) is read but not handed out yet
  size_t end_ = 0;
  // Written but not sent yet. Mutable, like broken_, because httplib's is_writable() is
  // const and flushes.
  mutable std::string out_;
  mutable std::optional<Address> remote_, local_;
  Deadline deadline_ = Deadline::max();
  bool in_headers_ = false;
  bool http10_ = false;  // the request line says HTTP/1.0
  size_t header_bytes_ = 0;
  size_t header_lines_ = 0;  // complete lines so far, the request line included
  std::string line_;  // the line being read, up to max_header_bytes
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
                                                             std::function<void()> on_dropped) {
  std::unique_ptr<Tls> context;
  if (tls.enabled()) {
    TIDE_ASSIGN_OR_RETURN(context, Tls::load(tls));
  }
  return std::unique_ptr<GuardedServer>(new GuardedServer(limits, std::move(context), std::move(on_dropped)));
}

GuardedServer::GuardedServer(const HttpLimits& limits, std::unique_ptr<Tls> tls, std::function<void()> on_dropped)
    : limits_(limits), tls_(std::move(tls)), interrupt_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  new_task_queue = [limits = limits_, on_dropped = std::move(on_dropped)] {
    return new ConnectionQueue(limits.max_connections, limits.max_refusal_backlog, on_dropped);
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

bool GuardedServer::process_and_close_socket(socket_t sock) {
  if (t_dropping) {
    ::close(sock);
    return false;
  }
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  const bool refusing = t_refusing;
  const std::chrono::milliseconds limit =
      refusing ? std::min(kRefusalDeadline, limits_.request_read_deadline) : limits_.request_read_deadline;
  SSL* ssl = tls_ != nullptr ? tls_->session(sock) : nullptr;
  if (tls_ != nullptr && ssl == nullptr) {
    ::close(sock);
    return false;
  }
  Connection connection(sock, ssl, interrupt_fd_, limits_,
                        {std::chrono::seconds(read_timeout_sec_), std::chrono::seconds(write_timeout_sec_)}, refusing);
  t_connection = &connection;
  bool ok = connection.handshake(SteadyClock::now() + limit);
  for (size_t served = 0; ok && svr_sock_ != INVALID_SOCKET; ++served) {
    if (!connection.awaitRequest(std::chrono::seconds(keep_alive_timeout_sec_))) break;
    connection.beginRequest(SteadyClock::now() + limit);
    const bool last = refusing || served + 1 >= keep_alive_max_count_;
    bool closed_by_client = false;
    ok = process_request(connection, last, closed_by_client, nullptr) && connection.flush();
    if (connection.headersRefused()) {
      if (!connection.answered()) {
        const std::string answer = rawErrorResponse(*connection.refusal());
        connection.write(answer.data(), answer.size());
      }
      break;
    }
    if (!ok || closed_by_client || last || connection.closing()) break;
  }
  if (refusing) connection.closeAfterResponse();
  connection.close();
  t_connection = nullptr;
  return ok;
}

std::optional<Status> connectionRefusal() { return t_connection != nullptr ? t_connection->refusal() : std::nullopt; }

void closeConnectionAfterResponse() {
  if (t_connection != nullptr) t_connection->closeAfterResponse();
}

bool flushConnectionOutput() { return t_connection == nullptr || t_connection->flush(); }

bool connectionTimedOut() { return t_connection != nullptr && t_connection->timedOut(); }

}  // namespace tide::api
