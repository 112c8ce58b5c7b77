// Test support: a throw-away PKI generated at test time with the `openssl` command into a fresh
// temporary directory (private keys are never committed). A CA, a server certificate for
// 127.0.0.1/localhost, a client certificate, and an unrelated CA that trusts neither.
#pragma once

#include <memory>
#include <string>

namespace kvpool::rpc {

struct TestCerts {
  std::string dir;
  std::string ca;           // CA certificate (PEM)
  std::string server_cert;  // signed by ca; SAN IP:127.0.0.1, DNS:localhost
  std::string server_key;
  std::string client_cert;  // signed by ca; CN=kvpool-test-client
  std::string client_key;
  std::string other_ca;     // a CA that signed nothing here
  std::string secret_file;  // holds "test-secret"

  // Generates everything (~0.3 s); dir is "" on failure (the test should then fail).
  static std::unique_ptr<TestCerts> Generate();
  TestCerts() = default;
  TestCerts(const TestCerts&) = delete;
  TestCerts& operator=(const TestCerts&) = delete;
  ~TestCerts();  // removes dir
};

}  // namespace kvpool::rpc
