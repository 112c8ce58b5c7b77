// Authentication and TLS across real processes (docs/security.md): a pool started with a secret
// serves clients that have it and refuses, with one generic error, everyone else (master RPCs and
// raw reads on a node's data port alike); a TLS pool round-trips bytes and, with
// --tls_verify_client, refuses clients without a certificate.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "pool.h"
#include "rpc/auth.h"
#include "rpc/connection.h"
#include "rpc/frame.h"
#include "rpc/kvpool.pb.h"
#include "rpc/raw_peer_test_util.h"
#include "rpc/test_certs.h"

namespace kvpool::testing {
namespace {

using std::chrono::seconds;

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { certs_ = rpc::TestCerts::Generate().release(); }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override { ASSERT_FALSE(certs_->dir.empty()) << "openssl could not make certs"; }

  // Writes `content` to a file in the certs directory; returns its path.
  static std::string WriteFile(const std::string& name, const std::string& content) {
    std::string path = certs_->dir + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static std::vector<char> Pattern(size_t n, int seed) {
    std::vector<char> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + seed) % 251);
    return v;
  }
  // put then get of 1 MiB, byte-exact.
  static void ExpectRoundTrip(Client& c, const std::string& key) {
    auto data = Pattern(1 << 20, 7);
    ASSERT_TRUE(c.RegisterBuffer(data.data(), data.size()).ok());
    Status st = c.PutFrom(key, data.data(), data.size());
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::vector<char> back(data.size());
    ASSERT_TRUE(c.RegisterBuffer(back.data(), back.size()).ok());
    auto got = c.GetInto(key, back.data(), back.size());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(back, data);
  }

  static rpc::TestCerts* certs_;
};
rpc::TestCerts* SecurityTest::certs_ = nullptr;

// Sends `method` as the very first frame on a fresh connection to `port` and returns the status
// of the reply (0 when the peer closed without one).
int32_t FirstFrameStatus(uint16_t port, uint16_t method, const std::string& meta) {
  int fd = rpc::RawLoopbackSocket(port);
  if (fd < 0) return 0;
  rpc::FrameHeader h;
  h.method = method;
  h.request_id = 9;
  h.meta_len = static_cast<uint32_t>(meta.size());
  uint8_t hb[rpc::kFrameHeaderBytes];
  rpc::EncodeFrameHeader(h, hb);
  std::string frame(reinterpret_cast<char*>(hb), sizeof(hb));
  frame += meta;
  (void)::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
  uint8_t rb[rpc::kFrameHeaderBytes];
  size_t got = 0;
  while (got < sizeof(rb)) {
    ssize_t n = ::read(fd, rb + got, sizeof(rb) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got < sizeof(rb)) return 0;
  auto r = rpc::DecodeFrameHeader(rb, rpc::FrameLimits());
  return r.ok() ? r->status : 0;
}

TEST_F(SecurityTest, SecretPoolServesClientsWithTheSecretAndRefusesOthers) {
  const std::string secret = WriteFile("pool_secret", "correct horse battery staple\n");
  Pool pool({"--auth_secret_file", secret});
  ClientOptions with;
  with.auth_secret_file = secret;
  pool.SetClientSecurity(with);
  pool.AddNode("32MB", {"--auth_secret_file", secret});
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  ExpectRoundTrip(*client, "secret-page");

  // No secret, or a wrong one: Setup's first contact is refused.
  for (const std::string& s : {std::string(), std::string("guess")}) {
    ClientOptions o;
    o.master_server_address = pool.master_address();
    o.auth_secret = s;
    auto c = Client::Setup(o);
    EXPECT_EQ(c.code(), ErrorCode::ILLEGAL_CLIENT) << "secret '" << s << "'";
  }
  // Raw requests as the first frame, to the master and to the node's data port: one generic
  // error, whether or not the key exists.
  rpc::KeysRequest keys;
  keys.add_keys("secret-page");
  const uint16_t master_port = static_cast<uint16_t>(std::stoi(pool.master_address().substr(10)));
  for (uint16_t method : {rpc::EXISTS, rpc::GET_REPLICA_LIST, rpc::PUT_START, rpc::STAT}) {
    EXPECT_EQ(FirstFrameStatus(master_port, method, keys.SerializeAsString()),
              static_cast<int32_t>(ErrorCode::ILLEGAL_CLIENT))
        << "method " << method;
  }
  const uint16_t node_port = static_cast<uint16_t>(std::stoi(pool.node_segment(0).substr(10)));
  rpc::DataRequest read;
  read.set_segment_name(pool.node_segment(0));
  auto* range = read.add_ranges();
  range->set_offset(0);
  range->set_length(4096);
  EXPECT_EQ(FirstFrameStatus(node_port, rpc::READ, read.SerializeAsString()),
            static_cast<int32_t>(ErrorCode::ILLEGAL_CLIENT));
  // A node-port client that skips the secret is refused at the handshake too.
  rpc::Endpoint node{"127.0.0.1", node_port};
  EXPECT_EQ(rpc::Connection::Connect(node, "t", DeadlineAfter(seconds(5))).code(),
            ErrorCode::ILLEGAL_CLIENT);
  rpc::ConnectOptions wrong;
  wrong.auth_secret = "guess";
  EXPECT_EQ(rpc::Connection::Connect(node, "t", DeadlineAfter(seconds(5)), wrong).code(),
            ErrorCode::ILLEGAL_CLIENT);

  // The CLI: with the file it works; without it, a clear refusal; a secret on the command line
  // is refused outright.
  const std::string m = pool.master_address();
  auto r =
      RunCommand(kBinary, {"exists", "secret-page", "--master", m, "--auth_secret_file", secret});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"exists", "secret-page", "--master", m});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("ILLEGAL_CLIENT"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("yes"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"stat", "--master", m, "--auth_secret=correct"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--auth_secret_file"), std::string::npos) << r.output;
}

// Without a secret, a master listening beyond loopback is in protected mode (it says so and how
// to leave it); with --insecure it serves everyone and warns that it does.
TEST_F(SecurityTest, MasterWithoutSecretOnPublicAddressIsProtectedOrWarns) {
  Process master(kBinary,
                 {"master", "--rpc_host", "0.0.0.0", "--rpc_port", std::to_string(FreePort()),
                  "--metrics_port", "0"},
                 "master");
  EXPECT_TRUE(master.WaitForLog("PROTECTED MODE", std::chrono::seconds(10))) << master.Log();
  EXPECT_TRUE(master.WaitForLog("start the master with --insecure", std::chrono::seconds(1)))
      << master.Log();
  Process open(kBinary,
               {"master", "--rpc_host", "0.0.0.0", "--rpc_port", std::to_string(FreePort()),
                "--metrics_port", "0", "--insecure"},
               "master");
  EXPECT_TRUE(open.WaitForLog("WITHOUT AUTHENTICATION", std::chrono::seconds(10))) << open.Log();
}

TEST_F(SecurityTest, TlsPoolRoundTripsAndMutualTlsNeedsClientCertificate) {
  const std::vector<std::string> server_tls = {"--tls_cert",       certs_->server_cert, "--tls_key",
                                               certs_->server_key, "--tls_ca",          certs_->ca};
  std::vector<std::string> master_flags = server_tls;
  master_flags.insert(master_flags.end(), {"--tls_verify_client", "true"});
  Pool pool(master_flags);
  ClientOptions tls;
  tls.tls_ca_file = certs_->ca;
  tls.tls_cert_file = certs_->client_cert;
  tls.tls_key_file = certs_->client_key;
  pool.SetClientSecurity(tls);
  pool.AddNode("32MB", server_tls);  // presents the server certificate as its client cert too
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  ExpectRoundTrip(*client, "tls-page");

  ClientOptions no_cert;
  no_cert.master_server_address = pool.master_address();
  no_cert.tls_ca_file = certs_->ca;
  EXPECT_EQ(Client::Setup(no_cert).code(), ErrorCode::RPC_FAIL);
  ClientOptions plain;
  plain.master_server_address = pool.master_address();
  EXPECT_EQ(Client::Setup(plain).code(), ErrorCode::UNAVAILABLE_IN_CURRENT_MODE);
}

}  // namespace
}  // namespace kvpool::testing
