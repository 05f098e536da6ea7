// One HTTP/1.1 listening socket and its threads (cpp-httplib): the settings every endpoint of the
// server shares (timeouts, body limit, thread count), binding with a useful error, and a stop that
// waits for the requests in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace infer::serve {

struct ListenOptions {
  std::string host = "127.0.0.1";
  int port = 0;      // 0: any free port (start() returns it)
  int threads = 64;  // connections served at once; more wait to be accepted
  std::size_t max_body = std::size_t{64} << 20;
  std::chrono::seconds read_timeout{10};  // a client that sends nothing for this long mid-request is dropped
  std::chrono::seconds write_timeout{10};
  std::chrono::seconds idle_timeout{5};  // a kept-alive connection with no new request for this long is closed
};

class HttpListener {
 public:
  explicit HttpListener(const ListenOptions& options);
  ~HttpListener();  // stop()
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  httplib::Server& server() { return *server_; }  // routes are added before start()

  // Binds and starts accepting on a thread of its own. Returns the bound port. Throws ListenError.
  int start();
  // Stops accepting, then returns once every request already being read or run has been answered and
  // idle connections are closed (bounded by the timeouts). Idempotent.
  void stop();

 private:
  ListenOptions options_;
  std::unique_ptr<httplib::Server> server_;
  int socket_ = -1;                 // the listening socket, once bound (set by httplib's socket options)
  std::atomic<bool> ended_{false};  // the accept loop has returned
  std::thread thread_;
};

}  // namespace infer::serve
