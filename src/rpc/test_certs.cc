#include "rpc/test_certs.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

namespace kvpool::rpc {

std::unique_ptr<TestCerts> TestCerts::Generate() {
  auto c = std::make_unique<TestCerts>();
  char tmpl[] = "/tmp/kvpool_certs_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return c;
  const std::string d = tmpl;
  // EC keys: generated in milliseconds, also under ASan.
  const std::string script = fmt::format(
      R"(set -e; cd '{0}'
key() {{ openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }}
key ca.key; key other_ca.key; key server.key; key client.key
openssl req -x509 -new -key ca.key -subj /CN=kvpool-test-ca -days 2 -out ca.pem
openssl req -x509 -new -key other_ca.key -subj /CN=kvpool-other-ca -days 2 -out other_ca.pem
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl req -new -key server.key -subj /CN=kvpool-test-server -out server.csr
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.pem 2>/dev/null
openssl req -new -key client.key -subj /CN=kvpool-test-client -out client.csr
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile client.ext -out client.pem 2>/dev/null
printf 'test-secret\n' > secret; chmod 600 secret *.key)",
      d);
  const std::string script_file = d + "/make.sh";
  if (FILE* f = std::fopen(script_file.c_str(), "w")) {
    std::fputs(script.c_str(), f);
    std::fclose(f);
  }
  int rc = std::system(("bash '" + script_file + "'").c_str());
  if (rc != 0) {
    std::fprintf(stderr, "TestCerts: openssl failed (rc %d) in %s\n", rc, d.c_str());
    return c;
  }
  c->dir = d;
  c->ca = d + "/ca.pem";
  c->server_cert = d + "/server.pem";
  c->server_key = d + "/server.key";
  c->client_cert = d + "/client.pem";
  c->client_key = d + "/client.key";
  c->other_ca = d + "/other_ca.pem";
  c->secret_file = d + "/secret";
  return c;
}

TestCerts::~TestCerts() {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace kvpool::rpc
