// The admin endpoints: AdminRoutes' answers, and an HttpServer serving them on a real socket.
#include "master/admin_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/http_server.h"
#include "common/tenant_key.h"
#include "master/master_service.h"
#include "master/master_test_util.h"

namespace kvpool::master::testing {
namespace {

using nlohmann::json;

class AdminRoutesTest : public CoreTest {
 protected:
  AdminRoutesTest()
      : service_(&core_), routes_(&core_, &service_.metrics(), 1.7e9, [] { return At(5); }) {}

  json GetJson(std::string_view path, const AdminRoutes::Params& params = {}, int want = 200) {
    AdminResponse r = routes_.Get(path, params);
    EXPECT_EQ(r.status, want) << path << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return json::parse(r.body);
  }

  HttpHandlers Handlers() {
    HttpHandlers h;
    h.get = [this](std::string_view path, const HttpParams& params) {
      return routes_.Get(path, params);
    };
    return h;
  }

  MasterService service_;
  AdminRoutes routes_;
};

TEST_F(AdminRoutesTest, HealthMetricsAndUnknownPaths) {
  EXPECT_EQ(routes_.Get("/health", {}).body, "OK");
  AdminResponse m = routes_.Get("/metrics", {});
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.content_type.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(m.body.find("kvpool_master_start_time_seconds 1700000000\n"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("kvpool_master_info{epoch=\"000000000000002a\"} 1\n"), std::string::npos);
  EXPECT_EQ(routes_.Get("/nope", {}).status, 404);
  EXPECT_NE(routes_.Get("/", {}).body.find("/objects"), std::string::npos);
}

TEST_F(AdminRoutesTest, TenantsShowSeparately) {
  Mount("node", "node:1");
  PutComplete("w", MakeTenantKey("team-a", "page"), 100);
  PutComplete("w", "page", 50);
  json objects = GetJson("/objects", {{"tenant", "team-a"}})["objects"];
  ASSERT_EQ(objects.size(), 1u) << objects;
  EXPECT_EQ(objects[0]["tenant"], "team-a");
  EXPECT_EQ(objects[0]["key"], "page");  // the tenant's own key, no prefix
  EXPECT_FALSE(objects[0].contains("key_hex"));
  json one = GetJson("/object", {{"key", "page"}, {"tenant", "team-a"}});
  EXPECT_EQ(one["size"], 100);
  EXPECT_EQ(GetJson("/object", {{"key", "page"}})["tenant"], "default");
  json tenants = GetJson("/tenants")["tenants"];
  ASSERT_EQ(tenants.size(), 2u) << tenants;
  EXPECT_EQ(tenants[0]["tenant"], "default");  // "" sorts first
  EXPECT_EQ(tenants[0]["used_bytes"], 50);
  EXPECT_EQ(tenants[1]["tenant"], "team-a");
  EXPECT_EQ(tenants[1]["objects"], 1);
  EXPECT_FALSE(tenants[1].contains("quota_bytes"));
}

TEST_F(AdminRoutesTest, DrainMarksASegment) {
  Mount("node", "node:1");
  EXPECT_EQ(GetJson("/segments")["segments"][0]["accepting"], true);
  AdminResponse r = routes_.Post("/drain", {{"segment", "node:1"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["accepting"], false);
  EXPECT_EQ(GetJson("/segments")["segments"][0]["accepting"], false);
  EXPECT_EQ(Put1("c", "k", 100).code(), static_cast<int32_t>(ErrorCode::NO_AVAILABLE_HANDLE));
  r = routes_.Post("/drain", {{"segment", "node:1"}, {"undo", "1"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Put1("c", "k", 100).code(), 0);
  EXPECT_EQ(routes_.Post("/drain", {}).status, 400);
  r = routes_.Post("/drain", {{"segment", "nope"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["code"], "SEGMENT_NOT_FOUND");
  EXPECT_EQ(routes_.Post("/objects", {}).status, 405);  // a GET path (issue 33)
}

// undo is parsed strictly: yes/true/1 undo, no/false/0 drain, anything else is a 400 that
// changes nothing (before, any value but "1" and "true" drained).
TEST_F(AdminRoutesTest, DrainUndoIsParsedStrictly) {
  Mount("node", "node:1");
  auto accepting = [&] { return GetJson("/segments")["segments"][0]["accepting"].get<bool>(); };
  for (const char* v : {"yes", "true", "1"}) {
    ASSERT_EQ(routes_.Post("/drain", {{"segment", "node:1"}}).status, 200);
    AdminResponse r = routes_.Post("/drain", {{"segment", "node:1"}, {"undo", v}});
    EXPECT_EQ(r.status, 200) << v << ": " << r.body;
    EXPECT_TRUE(accepting()) << v;
  }
  for (const char* v : {"no", "false", "0"}) {
    AdminResponse r = routes_.Post("/drain", {{"segment", "node:1"}, {"undo", v}});
    EXPECT_EQ(r.status, 200) << v << ": " << r.body;
    EXPECT_FALSE(accepting()) << v;
    ASSERT_EQ(routes_.Post("/drain", {{"segment", "node:1"}, {"undo", "1"}}).status, 200);
  }
  for (const char* v : {"", "Yes", "2", "undo", "truee"}) {
    AdminResponse r = routes_.Post("/drain", {{"segment", "node:1"}, {"undo", v}});
    EXPECT_EQ(r.status, 400) << "undo=" << v;
    EXPECT_EQ(json::parse(r.body)["code"], "INVALID_PARAMS");
    EXPECT_TRUE(accepting()) << "undo=" << v << " changed the segment";
  }
}

TEST_F(AdminRoutesTest, SegmentsObjectsObjectClients) {
  Mount("node", "node:1");
  PutComplete("c", "page/1", 100);
  PutComplete("c", "page/2", 200);
  PutComplete("c", std::string("bin\x01\xff", 5), 300);

  json seg = GetJson("/segments");
  ASSERT_EQ(seg["segments"].size(), 1u);
  EXPECT_EQ(seg["segments"][0]["name"], "node:1");
  EXPECT_EQ(seg["segments"][0]["capacity_bytes"], kSeg);
  EXPECT_EQ(seg["segments"][0]["objects"], 3);
  EXPECT_EQ(seg["objects"], 3);

  json page = GetJson("/objects", {{"prefix", "page/"}, {"limit", "1"}});
  ASSERT_EQ(page["objects"].size(), 1u);
  EXPECT_EQ(page["objects"][0]["state"], "complete");
  std::string first = page["objects"][0]["key"];
  ASSERT_FALSE(page["next_cursor"].get<std::string>().empty());
  json rest = GetJson("/objects", {{"prefix", "page/"}, {"cursor", page["next_cursor"]}});
  std::set<std::string> keys = {first};
  for (const auto& o : rest["objects"]) keys.insert(o["key"].get<std::string>());
  EXPECT_EQ(keys, (std::set<std::string>{"page/1", "page/2"}));

  json bin = GetJson("/objects", {{"prefix", "bin"}});
  ASSERT_EQ(bin["objects"].size(), 1u);
  EXPECT_EQ(bin["objects"][0]["key_hex"], "62696e01ff");

  json obj = GetJson("/object", {{"key", "page/2"}});
  EXPECT_EQ(obj["size"], 200);
  EXPECT_EQ(obj["state"], "complete");
  EXPECT_EQ(obj["lease_remaining_ms"], 0);
  ASSERT_EQ(obj["replicas"].size(), 1u);
  EXPECT_EQ(obj["replicas"][0]["segment"], "node:1");
  EXPECT_EQ(GetJson("/object", {{"key_hex", "62696e01FF"}})["size"], 300);

  EXPECT_EQ(GetJson("/object", {{"key", "nope"}}, 404)["code"], "OBJECT_NOT_FOUND");
  EXPECT_EQ(GetJson("/object", {}, 400)["code"], "INVALID_PARAMS");
  EXPECT_EQ(GetJson("/object", {{"key_hex", "abc"}}, 400)["code"], "INVALID_PARAMS");
  EXPECT_EQ(GetJson("/objects", {{"limit", "0"}}, 400)["code"], "INVALID_PARAMS");
  EXPECT_EQ(GetJson("/objects", {{"limit", "ten"}}, 400)["code"], "INVALID_PARAMS");
  EXPECT_EQ(GetJson("/objects", {{"cursor", "garbage"}}, 400)["code"], "INVALID_PARAMS");

  json clients = GetJson("/clients");
  ASSERT_EQ(clients["clients"].size(), 2u);
  EXPECT_EQ(clients["clients"][1]["client_id"], "node");
  EXPECT_EQ(clients["clients"][1]["segments"][0], "node:1");
  EXPECT_EQ(clients["clients"][1]["last_seen_ms_ago"], 5000);
}

// Issue 33: queries with no one meaning are refused (400), not answered from the first value;
// a cursor this master did not make is refused, not listed from the start; a path used with
// the wrong method is 405 naming the right one.
TEST_F(AdminRoutesTest, AmbiguousQueriesAndWrongMethodsAreRefused) {
  Mount("node", "node:1");
  for (int i = 0; i < 5; ++i) PutComplete("c", "page/" + std::to_string(i), 100);
  PutComplete("c", "other", 100);
  EXPECT_EQ(GetJson("/object", {{"key", "page/1"}, {"key_hex", "6b"}}, 400)["code"],
            "INVALID_PARAMS");
  json twice = GetJson("/objects", {{"limit", "1"}, {"limit", "5"}}, 400);
  EXPECT_NE(twice["message"].get<std::string>().find("'limit' is given 2 times"), std::string::npos)
      << twice;
  // A cursor naming a key of another shard than the one it names.
  std::string key = "k";
  size_t shard = (ObjectTable::ShardOf(key) + 1) % ObjectTable::kShards;
  EXPECT_EQ(GetJson("/objects", {{"cursor", std::to_string(shard) + "/6b"}}, 400)["code"],
            "INVALID_PARAMS");
  EXPECT_EQ(GetJson("/objects", {{"cursor", "64/"}}, 400)["code"], "INVALID_PARAMS");
  // A real cursor works; one from another prefix's listing is refused.
  json page = GetJson("/objects", {{"prefix", "page/"}, {"limit", "2"}});
  const std::string cursor = page["next_cursor"];
  ASSERT_FALSE(cursor.empty());
  EXPECT_EQ(GetJson("/objects", {{"prefix", "page/"}, {"cursor", cursor}})["objects"].size(), 3u);
  EXPECT_EQ(GetJson("/objects", {{"prefix", "zzz"}, {"cursor", cursor}}, 400)["code"],
            "INVALID_PARAMS");

  AdminResponse drain = routes_.Get("/drain", {{"segment", "node:1"}});
  EXPECT_EQ(drain.status, 405) << drain.body;
  EXPECT_EQ(drain.allow, "POST");
  AdminResponse post = routes_.Post("/objects", {});
  EXPECT_EQ(post.status, 405) << post.body;
  EXPECT_EQ(post.allow, "GET");
  EXPECT_EQ(routes_.Post("/nope", {}).status, 404);
}

TEST_F(AdminRoutesTest, ServedOverHttp) {
  Mount("node", "node:1");
  PutComplete("c", "k", 100);
  HttpServer http("test admin", "127.0.0.1", 0, Handlers());
  ASSERT_TRUE(http.Start().ok());
  ASSERT_NE(http.port(), 0);
  httplib::Client client("127.0.0.1", http.port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto health = client.Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "OK");
  auto obj = client.Get("/object?key=k");
  ASSERT_TRUE(obj);
  EXPECT_EQ(json::parse(obj->body)["size"], 100);
  auto missing = client.Get("/object?key=%6Eope");  // URL-decoded to "nope"
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("key=nope"), std::string::npos) << missing->body;
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("kvpool_master_objects 1\n"), std::string::npos);

  // The same port cannot be taken twice (no SO_REUSEPORT sharing).
  HttpServer second("test admin", "127.0.0.1", http.port(), Handlers());
  Status st = second.Start();
  EXPECT_EQ(st.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(st.message().find(std::to_string(http.port())), std::string::npos);
  http.Stop();
  http.Stop();  // idempotent
  EXPECT_FALSE(client.Get("/health"));
}

}  // namespace
}  // namespace kvpool::master::testing
