#include "serve/http_listener.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <httplib.h>

#include "serve/serve_error.h"

namespace infer::serve {

HttpListener::HttpListener(const ListenOptions& options)
    : options_(options), server_(std::make_unique<httplib::Server>()) {
  httplib::Server& s = *server_;
  const int threads = options.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  s.set_payload_max_length(options.max_body);
  s.set_read_timeout(options.read_timeout);
  s.set_write_timeout(options.write_timeout);
  s.set_keep_alive_timeout(options.idle_timeout.count());
  // A client may keep its connection for any number of requests (a load balancer, perf_analyzer);
  // httplib's default closes it after 5.
  s.set_keep_alive_max_count(1'000'000);
  // A response is written in more than one send (its head, then its body): with Nagle's algorithm the
  // second waits for the client's delayed ACK, 40 ms a request on Linux.
  s.set_tcp_nodelay(true);
  // httplib's own options, and the listening socket kept for start() (its only socket created here).
  s.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    socket_ = sock;
  });
}

HttpListener::~HttpListener() { stop(); }

int HttpListener::start() {
  httplib::Server& s = *server_;
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  int port = options_.port;
  errno = 0;
  if (port == 0) {
    port = s.bind_to_any_port(options_.host);
    if (port < 0) port = 0;
  } else if (!s.bind_to_port(options_.host, port)) {
    port = 0;
  }
  if (port == 0) {
    const int e = errno;
    throw ListenError("cannot listen on " + where + (e ? std::string(": ") + std::strerror(e) : std::string()) +
                      " (is the port in use, or the address not this machine's?)");
  }
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's 0.11):
  // when more clients connect at once than the accept loop has taken, the kernel drops the rest,
  // which wait for their SYN's retry (1 s) and on a busy machine were reset. listen() again on
  // the bound socket sets the queue to the system's most (net.core.somaxconn).
  if (socket_ >= 0) ::listen(static_cast<int>(socket_), SOMAXCONN);
  thread_ = std::thread([this, &s] {
    s.listen_after_bind();
    ended_ = true;
  });
  // httplib's stop() does nothing before the accept loop runs: wait for it, so that stop() always stops.
  while (!s.is_running() && !ended_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void HttpListener::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();  // listen_after_bind returns after its thread pool has finished every connection
}

}  // namespace infer::serve
