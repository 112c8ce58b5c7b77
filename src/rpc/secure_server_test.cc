// Authentication and TLS on real sockets: the right secret works; a missing or wrong one is
// refused before the service sees any request; TLS round-trips (with and without client
// certificates); mismatched TLS settings fail fast with a clear error.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "rpc/auth.h"
#include "rpc/connection.h"
#include "rpc/connection_pool.h"
#include "rpc/echo_service_test_util.h"
#include "rpc/kvpool.pb.h"
#include "rpc/raw_peer_test_util.h"
#include "rpc/server.h"
#include "rpc/test_certs.h"

namespace kvpool::rpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The echo service, recording who asked.
class CountingEcho : public EchoService {
 public:
  // Records who asked (the handshake's verdict), then serves as Handle.
  asio::awaitable<Reply> HandleFrom(const ConnectionContext& context, const FrameHeader& h,
                                    std::string_view meta, PayloadReader& payload) override {
    {
      std::lock_guard lock(mu);
      last_privileged = context.privileged;
      last_tenant = context.tenant_id;
    }
    co_return co_await Handle(h, meta, payload);
  }
  std::mutex mu;
  bool last_privileged = false;  // guarded by mu
  std::string last_tenant;       // guarded by mu
};

class SecureServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { certs_ = TestCerts::Generate().release(); }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override { ASSERT_FALSE(certs_->dir.empty()) << "openssl could not make certs"; }

  void StartServer(SecurityOptions security) {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.limits.max_payload_bytes = 1 << 20;
    o.frame_timeout = milliseconds(500);
    o.handshake_timeout = milliseconds(500);
    o.security = std::move(security);
    server_ = std::make_unique<Server>(o, &service_);
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ep_ = Endpoint{"127.0.0.1", server_->port()};
  }
  static Deadline Soon() { return DeadlineAfter(seconds(5)); }
  static SecurityOptions ServerTls(bool verify_client) {
    SecurityOptions s;
    s.tls_cert = certs_->server_cert;
    s.tls_key = certs_->server_key;
    s.tls_ca = certs_->ca;
    s.tls_verify_client = verify_client;
    return s;
  }
  static ConnectOptions ClientTls(const std::string& ca, bool with_cert) {
    SecurityOptions s;
    s.tls_ca = ca;
    if (with_cert) {
      s.tls_cert = certs_->client_cert;
      s.tls_key = certs_->client_key;
    }
    auto ctx = TlsClientContext::Create(s);
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    ConnectOptions c;
    if (ctx.ok()) c.tls = *ctx;
    return c;
  }
  // A 64 KiB payload written and read back byte-exact.
  void ExpectRoundTrip(const ConnectOptions& options) {
    auto c = Connection::Connect(ep_, "t", Soon(), options);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::string data(64 << 10, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
    iovec out{data.data(), data.size()};
    Empty resp;
    ASSERT_TRUE((*c)->Call(WRITE, Empty(), &resp, {&out, 1}, {}, Soon()).ok());
    std::string back(data.size(), '\0');
    iovec in{back.data(), back.size()};
    Status st = (*c)->Call(READ, Empty(), &resp, {}, {&in, 1}, Soon());
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(back, data);
    EXPECT_TRUE((*c)->StillOpen());  // an idle pooled connection stays usable
  }

  static TestCerts* certs_;
  CountingEcho service_;
  std::unique_ptr<Server> server_;
  Endpoint ep_;
};
TestCerts* SecureServerTest::certs_ = nullptr;

SecurityOptions WithSecret(std::string secret) {
  SecurityOptions s;
  s.auth_secret = std::move(secret);
  return s;
}

ConnectOptions Secret(std::string secret) {
  ConnectOptions c;
  c.auth_secret = std::move(secret);
  return c;
}

TEST(AuthProofTest, DependsOnSecretLabelAndBothNonces) {
  std::string cn = MakeAuthNonce(), sn = MakeAuthNonce();
  EXPECT_NE(cn, sn);
  std::string p = AuthProof("s", kClientLabel, cn, sn);
  EXPECT_EQ(p.size(), kAuthProofBytes);
  EXPECT_TRUE(ProofMatches(p, AuthProof("s", kClientLabel, cn, sn)));
  EXPECT_FALSE(ProofMatches(p, AuthProof("t", kClientLabel, cn, sn)));
  EXPECT_FALSE(ProofMatches(p, AuthProof("s", kServerLabel, cn, sn)));
  EXPECT_FALSE(ProofMatches(p, AuthProof("s", kClientLabel, sn, cn)));
  EXPECT_FALSE(ProofMatches(p, p.substr(1)));
  EXPECT_FALSE(ProofMatches("", ""));
}

TEST_F(SecureServerTest, RightSecretRoundTrips) {
  StartServer(WithSecret("s3cret"));
  ExpectRoundTrip(Secret("s3cret"));
}

TEST_F(SecureServerTest, MissingOrWrongSecretIsRefusedBeforeAnyRequest) {
  StartServer(WithSecret("s3cret"));
  auto none = Connection::Connect(ep_, "t", Soon());
  EXPECT_EQ(none.code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_NE(none.status().message().find("authentication failed"), std::string::npos);
  auto wrong = Connection::Connect(ep_, "t", Soon(), Secret("guess"));
  EXPECT_EQ(wrong.code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(service_.handled.load(), 0);
}

TEST_F(SecureServerTest, ClientWithSecretRefusesServerWithout) {
  StartServer(SecurityOptions());
  auto c = Connection::Connect(ep_, "t", Soon(), Secret("s3cret"));
  EXPECT_EQ(c.code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_NE(c.status().message().find("does not authenticate"), std::string::npos);
}

// A raw peer that skips AUTH and sends a READ gets one generic error and a closed socket; the
// service never runs, so nothing (not even whether data exists) leaks.
TEST_F(SecureServerTest, RequestBeforeAuthGetsGenericErrorAndClose) {
  StartServer(WithSecret("s3cret"));
  int fd = RawLoopbackSocket(ep_.port);
  ASSERT_GE(fd, 0);
  auto send_frame = [&](uint16_t method, const std::string& meta) {
    FrameHeader h;
    h.method = method;
    h.request_id = 1;
    h.meta_len = static_cast<uint32_t>(meta.size());
    uint8_t hb[kFrameHeaderBytes];
    EncodeFrameHeader(h, hb);
    ASSERT_EQ(::write(fd, hb, sizeof(hb)), static_cast<ssize_t>(sizeof(hb)));
    ASSERT_EQ(::write(fd, meta.data(), meta.size()), static_cast<ssize_t>(meta.size()));
  };
  auto read_header = [&]() -> Result<FrameHeader> {
    uint8_t hb[kFrameHeaderBytes];
    size_t got = 0;
    while (got < sizeof(hb)) {
      ssize_t n = ::read(fd, hb + got, sizeof(hb) - got);
      if (n <= 0) return Status(ErrorCode::RPC_FAIL, "closed");
      got += static_cast<size_t>(n);
    }
    auto h = DecodeFrameHeader(hb, FrameLimits());
    if (h.ok()) {
      std::string meta(h->meta_len, '\0');
      size_t m = 0;
      while (m < meta.size()) {
        ssize_t n = ::read(fd, meta.data() + m, meta.size() - m);
        if (n <= 0) break;
        m += static_cast<size_t>(n);
      }
    }
    return h;
  };
  rpc::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_client_nonce(MakeAuthNonce());
  send_frame(HELLO, hello.SerializeAsString());
  auto greeting = read_header();
  ASSERT_TRUE(greeting.ok());
  EXPECT_EQ(greeting->status, 0);
  send_frame(READ, DataRequest().SerializeAsString());
  auto refused = read_header();
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, static_cast<int32_t>(ErrorCode::ILLEGAL_CLIENT));
  char c;
  EXPECT_LE(::read(fd, &c, 1), 0);  // closed
  ::close(fd);
  EXPECT_EQ(service_.handled.load(), 0);
}

// A peer that stops after any byte of its AUTH frame (HELLO done), or after its HELLO, or sends
// nothing, is closed at the handshake deadline (500 ms here); none reaches the service.
TEST_F(SecureServerTest, StallAnywhereInTheHandshakeIsTimedOut) {
  StartServer(WithSecret("s3cret"));
  rpc::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_client_nonce(MakeAuthNonce());
  const std::string hello_meta = hello.SerializeAsString();
  FrameHeader h;
  h.method = HELLO;
  h.meta_len = static_cast<uint32_t>(hello_meta.size());
  std::string hello_frame(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(hello_frame.data()));
  hello_frame += hello_meta;
  Auth auth;
  auth.set_client_proof(std::string(32, 'p'));
  h.method = AUTH;
  h.meta_len = static_cast<uint32_t>(auth.ByteSizeLong());
  std::string auth_frame(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(auth_frame.data()));
  auth_frame += auth.SerializeAsString();
  std::vector<int> fds;
  for (size_t k = 0; k < hello_frame.size() + auth_frame.size(); ++k) {
    int fd = RawLoopbackSocket(ep_.port);
    ASSERT_GE(fd, 0);
    std::string prefix = (hello_frame + auth_frame).substr(0, k);
    ASSERT_EQ(::write(fd, prefix.data(), prefix.size()), static_cast<ssize_t>(prefix.size()));
    fds.push_back(fd);
  }
  auto start = Clock::now();
  for (int fd : fds) {
    // Closed (reads end); a peer past its HELLO first gets the HELLO reply.
    char buf[512];
    ssize_t n;
    do {
      n = ::read(fd, buf, sizeof(buf));
    } while (n > 0);
    EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "still open after " << n;
    ::close(fd);
  }
  EXPECT_LT(Clock::now() - start, seconds(3));
  EXPECT_EQ(service_.handled.load(), 0);
}

TEST(TenantKeyDerivationTest, DependsOnSecretAndTenant) {
  std::string a = DeriveTenantKey("pool", "a");
  EXPECT_EQ(a.size(), 2 * kAuthProofBytes);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a, DeriveTenantKey("pool", "a"));
  EXPECT_NE(a, DeriveTenantKey("pool", "b"));
  EXPECT_NE(a, DeriveTenantKey("other", "a"));
  EXPECT_EQ(DeriveTenantKey("pool", "default"), DeriveTenantKey("pool", ""));
}

ConnectOptions TenantKey(std::string key, std::string tenant) {
  ConnectOptions c;
  c.auth_secret = std::move(key);
  c.tenant_id = std::move(tenant);
  c.tenant_key = true;
  return c;
}

TEST_F(SecureServerTest, PoolSecretIsPrivilegedAndNamesItsTenant) {
  StartServer(WithSecret("s3cret"));
  ConnectOptions c = Secret("s3cret");
  c.tenant_id = "default";
  ExpectRoundTrip(c);
  {
    std::lock_guard lock(service_.mu);
    EXPECT_TRUE(service_.last_privileged);
    EXPECT_EQ(service_.last_tenant, "");  // "default" is the default tenant
  }
  c.tenant_id = "a";
  ExpectRoundTrip(c);
  std::lock_guard lock(service_.mu);
  EXPECT_TRUE(service_.last_privileged);
  EXPECT_EQ(service_.last_tenant, "a");
}

TEST_F(SecureServerTest, TenantKeyBindsTheConnectionToItsTenant) {
  StartServer(WithSecret("s3cret"));
  ExpectRoundTrip(TenantKey(DeriveTenantKey("s3cret", "a"), "a"));
  std::lock_guard lock(service_.mu);
  EXPECT_FALSE(service_.last_privileged);
  EXPECT_EQ(service_.last_tenant, "a");
}

TEST_F(SecureServerTest, TenantKeyCannotClaimAnotherTenant) {
  StartServer(WithSecret("s3cret"));
  const std::string key_a = DeriveTenantKey("s3cret", "a");
  auto as_b = Connection::Connect(ep_, "t", Soon(), TenantKey(key_a, "b"));
  EXPECT_EQ(as_b.code(), ErrorCode::ILLEGAL_CLIENT) << as_b.status().ToString();
  auto as_default = Connection::Connect(ep_, "t", Soon(), TenantKey(key_a, ""));
  EXPECT_EQ(as_default.code(), ErrorCode::ILLEGAL_CLIENT) << as_default.status().ToString();
  // Nor is a tenant key the pool secret.
  ConnectOptions as_pool = Secret(key_a);
  as_pool.tenant_id = "a";
  EXPECT_EQ(Connection::Connect(ep_, "t", Soon(), as_pool).code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(service_.handled.load(), 0);
}

TEST_F(SecureServerTest, WithoutSecretTenantIsCooperative) {
  StartServer(SecurityOptions());
  ConnectOptions c;
  c.tenant_id = "a";
  ExpectRoundTrip(c);
  std::lock_guard lock(service_.mu);
  EXPECT_TRUE(service_.last_privileged);  // nothing can be told apart without a secret
  EXPECT_EQ(service_.last_tenant, "a");
}

TEST_F(SecureServerTest, TlsRoundTripsWithoutClientCertificate) {
  StartServer(ServerTls(false));
  ExpectRoundTrip(ClientTls(certs_->ca, false));
}

TEST_F(SecureServerTest, TlsWithSecretRoundTrips) {
  SecurityOptions s = ServerTls(false);
  s.auth_secret = "s3cret";
  StartServer(s);
  ConnectOptions c = ClientTls(certs_->ca, false);
  c.auth_secret = "s3cret";
  ExpectRoundTrip(c);
  c.auth_secret = "guess";
  EXPECT_EQ(Connection::Connect(ep_, "t", Soon(), c).code(), ErrorCode::ILLEGAL_CLIENT);
}

TEST_F(SecureServerTest, MutualTlsNeedsClientCertificate) {
  StartServer(ServerTls(true));
  ExpectRoundTrip(ClientTls(certs_->ca, true));
  auto without = Connection::Connect(ep_, "t", Soon(), ClientTls(certs_->ca, false));
  EXPECT_EQ(without.code(), ErrorCode::RPC_FAIL) << without.status().ToString();
  EXPECT_EQ(service_.handled.load(), 2);  // the round trip's WRITE and READ only
}

TEST_F(SecureServerTest, UntrustedServerCertificateIsRejected) {
  StartServer(ServerTls(false));
  auto c = Connection::Connect(ep_, "t", Soon(), ClientTls(certs_->other_ca, false));
  EXPECT_EQ(c.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(c.status().message().find("certificate"), std::string::npos) << c.status().ToString();
}

TEST_F(SecureServerTest, PlainClientAgainstTlsServerFailsClearlyAndFast) {
  StartServer(ServerTls(false));
  auto start = Clock::now();
  auto c = Connection::Connect(ep_, "t", DeadlineAfter(seconds(3)));
  EXPECT_EQ(c.code(), ErrorCode::UNAVAILABLE_IN_CURRENT_MODE);
  EXPECT_NE(c.status().message().find("requires TLS"), std::string::npos) << c.status().ToString();
  EXPECT_LT(Clock::now() - start, seconds(3));
}

TEST_F(SecureServerTest, TlsClientAgainstPlainServerFailsClearlyAndFast) {
  StartServer(SecurityOptions());
  auto start = Clock::now();
  auto c = Connection::Connect(ep_, "t", DeadlineAfter(seconds(3)), ClientTls(certs_->ca, false));
  EXPECT_EQ(c.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(c.status().message().find("TLS handshake"), std::string::npos) << c.status().ToString();
  EXPECT_LT(Clock::now() - start, seconds(3));
}

TEST_F(SecureServerTest, PoolReusesTlsConnections) {
  StartServer(ServerTls(false));
  ConnectionPool pool("t", 8, ClientTls(certs_->ca, false));
  for (int i = 0; i < 3; ++i) {
    auto lease = pool.Acquire(ep_, Soon());
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    Empty resp;
    ASSERT_TRUE((*lease)->Call(READ, Empty(), &resp, Soon()).ok());
  }
  EXPECT_EQ(service_.handled.load(), 3);
}

}  // namespace
}  // namespace kvpool::rpc
