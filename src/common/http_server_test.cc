// HttpServer on a real socket: routing to the handlers, POST without a handler, start/stop.
#include "common/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace kvpool {
namespace {

HttpHandlers EchoHandlers(bool with_post) {
  HttpHandlers h;
  h.get = [](std::string_view path, const HttpParams& params) {
    HttpResponse r;
    r.content_type = "text/plain";
    r.body = "GET " + std::string(path);
    for (const auto& [k, v] : params) r.body += " " + k + "=" + v;
    return r;
  };
  if (with_post) {
    h.post = [](std::string_view path, const HttpParams&) {
      return HttpResponse{202, "text/plain", "POST " + std::string(path)};
    };
  }
  return h;
}

httplib::Client ClientFor(const HttpServer& server) {
  httplib::Client c("127.0.0.1", server.port());
  c.set_connection_timeout(5);
  c.set_read_timeout(5);
  return c;
}

TEST(HttpServerTest, RoutesGetAndPostToTheHandlers) {
  HttpServer server("test", "127.0.0.1", 0, EchoHandlers(true));
  ASSERT_TRUE(server.Start().ok());
  auto c = ClientFor(server);
  auto get = c.Get("/a/b?x=1&y=%41");
  ASSERT_TRUE(get) << httplib::to_string(get.error());
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "GET /a/b x=1 y=A");
  auto post = c.Post("/drain", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 202);
  EXPECT_EQ(post->body, "POST /drain");
}

TEST(HttpServerTest, PostWithoutAHandlerIsRefused) {
  HttpServer server("test", "127.0.0.1", 0, EchoHandlers(false));
  ASSERT_TRUE(server.Start().ok());
  auto c = ClientFor(server);
  auto post = c.Post("/anything", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
}

TEST(HttpServerTest, SecondStartAndTakenPortAreErrors) {
  HttpServer server("test", "127.0.0.1", 0, EchoHandlers(false));
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.Start().code(), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  HttpServer second("second", "127.0.0.1", server.port(), EchoHandlers(false));
  Status st = second.Start();
  EXPECT_EQ(st.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(st.message().find("second cannot listen on 127.0.0.1:" + std::to_string(server.port())),
            std::string::npos)
      << st.message();
}

TEST(HttpServerTest, StopRightAfterStartDoesNotHang) {
  for (int i = 0; i < 20; ++i) {
    HttpServer server("test", "127.0.0.1", 0, EchoHandlers(false));
    ASSERT_TRUE(server.Start().ok());
    server.Stop();
    server.Stop();  // idempotent
  }
}

}  // namespace
}  // namespace kvpool
