// The client side of TLS: one OpenSSL context per process role, shared by its connections.
// Connection drives OpenSSL over its own non-blocking socket (poll() with the call's deadline on
// every SSL_ERROR_WANT_READ/WANT_WRITE), so TLS keeps every wait bounded like the plain path.
#pragma once

#include <memory>
#include <string>

#include "kvpool/status.h"
#include "rpc/security_options.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct bio_st BIO;

namespace kvpool::rpc {

class TlsClientContext {
 public:
  // Verifies servers against o.tls_ca (certificate chain and the host name or IP it was dialled
  // by); presents o.tls_cert/o.tls_key when set (mutual TLS). TLS 1.2 or newer.
  // Errors: INVALID_PARAMS naming the file that cannot be loaded.
  static Result<std::shared_ptr<TlsClientContext>> Create(const SecurityOptions& o);
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  SSL_CTX* native() const { return ctx_; }

 private:
  explicit TlsClientContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;  // owned; OpenSSL contexts are thread-safe once configured
};

// A BIO over the non-blocking socket `fd` (not owned) that sends with MSG_NOSIGNAL: OpenSSL's
// own socket BIO uses write(), which raises SIGPIPE when the peer has closed. Null on failure.
BIO* NewSocketBio(int fd);

// The text of OpenSSL's most recent errors on this thread (and clears them), or `fallback`.
std::string TlsErrorText(const std::string& fallback);

}  // namespace kvpool::rpc
