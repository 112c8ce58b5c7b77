// EtcdClient against a fake etcd gateway (an httplib server on 127.0.0.1) that answers what a
// broken or hostile member might: fields of the wrong type, bad base64, missing revisions,
// huge or trickled answers. Each must be a bounded ETCD_OPERATION_ERROR, never a crash or hang.
#include "ha/etcd_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>
#include <thread>

namespace kvpool::ha {
namespace {

class FakeEtcd {
 public:
  FakeEtcd() {
    server_.Post(".*", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      if (trickle_) {
        // One byte every 20 ms for at most 3 s: whole only long after any test deadline.
        res.set_chunked_content_provider(
            "application/json", [n = 0](size_t, httplib::DataSink& sink) mutable {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              if (++n > 150) {
                sink.write("{}", 2);
                sink.done();
                return true;
              }
              return sink.write(" ", 1);
            });
        return;
      }
      res.set_content(answer_, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Bounded wait for the listen thread (the client would also just retry until its deadline).
    for (int i = 0; i < 200 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~FakeEtcd() {
    server_.stop();
    thread_.join();
  }
  void Answer(std::string body) {
    std::lock_guard lock(mu_);
    answer_ = std::move(body);
  }
  void Trickle() {
    std::lock_guard lock(mu_);
    trickle_ = true;
  }
  EtcdClient Client() const { return EtcdClient({rpc::Endpoint{"127.0.0.1", uint16_t(port_)}}); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string answer_ = "{}";
  bool trickle_ = false;
};

Deadline Soon() { return DeadlineAfter(std::chrono::seconds(2)); }

void ExpectMalformed(const Status& st, std::string_view names) {
  EXPECT_EQ(st.code(), ErrorCode::ETCD_OPERATION_ERROR) << st.ToString();
  EXPECT_NE(st.message().find(names), std::string::npos) << st.ToString();
}

TEST(EtcdClientTest, ReadsAWellFormedRange) {
  FakeEtcd etcd;
  etcd.Answer(R"({"kvs":[{"value":"MTI3LjAuMC4xOjUwMDUx","create_revision":"7","lease":"9"}]})");
  auto kv = etcd.Client().Get("k", Soon());
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  ASSERT_TRUE(kv->has_value());
  EXPECT_EQ((*kv)->value, "127.0.0.1:50051");
  EXPECT_EQ((*kv)->create_revision, 7);
  EXPECT_EQ((*kv)->lease, 9);
  etcd.Answer(R"({"header":{"revision":"3"}})");  // no kvs: the key is absent
  kv = etcd.Client().Get("k", Soon());
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_FALSE(kv->has_value());
}

TEST(EtcdClientTest, RefusesMalformedRangeAnswers) {
  FakeEtcd etcd;
  const std::pair<const char*, const char*> cases[] = {
      {R"({"kvs":[{"value":12,"create_revision":"7"}]})", "value is not base64"},
      {R"({"kvs":[{"value":"no*base64","create_revision":"7"}]})", "value is not base64"},
      {R"({"kvs":["a string"]})", "kv is not an object"},
      {R"({"kvs":{"value":"eA=="}})", "kvs is not an array"},
      {R"({"kvs":[{"value":"eA=="}]})", "create_revision"},
      {R"({"kvs":[{"value":"eA==","create_revision":"-4"}]})", "create_revision"},
      {R"({"kvs":[{"value":"eA==","create_revision":"12abc"}]})", "create_revision"},
      {R"({"kvs":[{"value":"eA==","create_revision":"99999999999999999999"}]})", "create_revision"},
      {R"({"kvs":[{"value":"eA==","create_revision":18446744073709551615}]})", "create_revision"},
      {R"({"kvs":[{"value":"eA==","create_revision":[1]}]})", "create_revision"},
      {R"({"kvs":[{"value":"eA==","create_revision":"7","lease":"-1"}]})", "lease"},
  };
  for (const auto& [answer, names] : cases) {
    SCOPED_TRACE(answer);
    etcd.Answer(answer);
    auto kv = etcd.Client().Get("k", Soon());
    ASSERT_FALSE(kv.ok());
    ExpectMalformed(kv.status(), names);
  }
}

TEST(EtcdClientTest, RefusesMalformedTxnAndLeaseAnswers) {
  FakeEtcd etcd;
  EtcdClient client = etcd.Client();
  for (const char* answer :
       {R"({"succeeded":"yes"})", R"({"succeeded":true})",
        R"({"succeeded":true,"header":{"revision":"0"}})", R"({"succeeded":true,"header":"x"})",
        R"({"responses":[7]})", R"({"responses":[{"response_range":{"kvs":[{"value":3}]}}]})"}) {
    SCOPED_TRACE(answer);
    etcd.Answer(answer);
    auto r = client.CreateIfAbsent("k", "v", 5, Soon());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::ETCD_OPERATION_ERROR) << r.status().ToString();
  }
  etcd.Answer(R"({"succeeded":true,"header":{"revision":"11"}})");
  auto won = client.CreateIfAbsent("k", "v", 5, Soon());
  ASSERT_TRUE(won.ok()) << won.status().ToString();
  EXPECT_TRUE(won->created);
  EXPECT_EQ(won->current.create_revision, 11);

  for (const char* answer : {R"({"ID":"-5","TTL":"3"})", R"({"ID":true})", R"({"TTL":"3"})"}) {
    SCOPED_TRACE(answer);
    etcd.Answer(answer);
    auto id = client.GrantLease(std::chrono::seconds(3), Soon());
    ASSERT_FALSE(id.ok());
    ExpectMalformed(id.status(), "ID");
  }
  etcd.Answer(R"({"result":{"ID":"5","TTL":"x"}})");
  auto ttl = client.KeepAlive(5, Soon());
  ASSERT_FALSE(ttl.ok());
  ExpectMalformed(ttl.status(), "TTL");
  etcd.Answer(R"({"result":{"ID":"5","TTL":"3"}})");
  ttl = client.KeepAlive(5, Soon());
  ASSERT_TRUE(ttl.ok()) << ttl.status().ToString();
  EXPECT_EQ(*ttl, 3);
}

TEST(EtcdClientTest, RefusesAnAnswerLargerThanTheLimit) {
  FakeEtcd etcd;
  const std::string huge(EtcdClient::kMaxAnswerBytes + 1, 'A');
  etcd.Answer(R"({"kvs":[{"value":")" + huge + R"(","create_revision":"7"}]})");
  auto kv = etcd.Client().Get("k", Soon());
  ASSERT_FALSE(kv.ok());
  ExpectMalformed(kv.status(), "larger than the limit");
}

TEST(EtcdClientTest, ATrickledAnswerEndsByTheDeadline) {
  FakeEtcd etcd;
  etcd.Trickle();
  const auto start = Clock::now();
  auto kv = etcd.Client().Get("k", DeadlineAfter(std::chrono::milliseconds(300)));
  const auto took = Clock::now() - start;
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), ErrorCode::ETCD_OPERATION_ERROR) << kv.status().ToString();
  EXPECT_NE(kv.status().message().find("not complete in time"), std::string::npos)
      << kv.status().ToString();
  // The answer would take 3 s; the call gives up one read (20 ms) after its 300 ms.
  EXPECT_LT(took, std::chrono::milliseconds(1000));
}

}  // namespace
}  // namespace kvpool::ha
