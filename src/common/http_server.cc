#include "common/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>

namespace kvpool {
namespace {

// Admin traffic is a scraper every few seconds and an operator now and then.
constexpr size_t kWorkerThreads = 4;
// Socket timeouts bound how long Stop waits for a slow or idle client.
constexpr time_t kSocketTimeoutSec = 5;
constexpr time_t kKeepAliveSec = 2;
constexpr auto kStopWait = std::chrono::seconds(15);

}  // namespace

HttpServer::HttpServer(std::string name, std::string host, uint16_t port, HttpHandlers handlers)
    : name_(std::move(name)), host_(std::move(host)), port_(port), handlers_(std::move(handlers)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  if (server_ != nullptr) {
    return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, name_ + " already started");
  }
  auto server = std::make_unique<httplib::Server>();
  server->new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
  // cpp-httplib's default sets SO_REUSEPORT, which would let a second master bind the same port
  // and silently take half the scrapes. SO_REUSEADDR only: a taken port is an error.
  server->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server->set_read_timeout(kSocketTimeoutSec, 0);
  server->set_write_timeout(kSocketTimeoutSec, 0);
  server->set_keep_alive_timeout(kKeepAliveSec);
  server->set_payload_max_length(64 << 10);
  auto serve = [](const HttpHandler& handler) {
    return [&handler](const httplib::Request& req, httplib::Response& res) {
      HttpParams params(req.params.begin(), req.params.end());
      HttpResponse r = handler(req.path, params);
      res.status = r.status;
      res.set_content(std::move(r.body), r.content_type.c_str());
    };
  };
  server->Get("/.*", serve(handlers_.get));
  if (handlers_.post) {
    server->Post("/.*", serve(handlers_.post));
  } else {
    server->Post("/.*", [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_content("method not allowed\n", "text/plain");
    });
  }
  server->set_exception_handler(
      [name = name_](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("{} path={} error={}", name, req.path, what);
        res.status = 500;
        res.set_content("internal error: " + what + "\n", "text/plain");
      });

  int port = port_;
  if (port_ == 0) {
    port = server->bind_to_any_port(host_);
  } else if (!server->bind_to_port(host_, port_)) {
    port = -1;
  }
  if (port <= 0) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("{} cannot listen on {}:{} (port taken, or not an address "
                              "of this machine); pass another --metrics_port (0: any free port) "
                              "or --enable_http_admin=false",
                              name_, host_, port_));
  }
  bound_port_ = static_cast<uint16_t>(port);
  server_ = std::move(server);
  finished_ = false;
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    finished_ = true;
  });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (server_ == nullptr) return;
  // stop() takes effect only once the accept loop runs (it may not have started yet), and must
  // be called once: wait for it to run, or for the loop to have ended on its own.
  auto end = std::chrono::steady_clock::now() + kStopWait;
  while (!finished_ && std::chrono::steady_clock::now() < end) {
    if (server_->is_running()) {
      server_->stop();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace kvpool
