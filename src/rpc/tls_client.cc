#include "rpc/tls_client.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

namespace kvpool::rpc {
namespace {

int FdOf(BIO* b) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b))); }

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

int BioWrite(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  ssize_t n = ::send(FdOf(b), data, static_cast<size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && WouldBlock()) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int BioRead(BIO* b, char* data, int len) {
  BIO_clear_retry_flags(b);
  ssize_t n = ::recv(FdOf(b), data, static_cast<size_t>(len), 0);
  if (n < 0 && WouldBlock()) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

// Built once and never changed (OpenSSL's own methods are static tables too).
const BIO_METHOD* SocketMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kvpool socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

}  // namespace

BIO* NewSocketBio(int fd) {
  BIO* b = BIO_new(SocketMethod());
  if (b != nullptr) BIO_set_data(b, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  return b;
}

std::string TlsErrorText(const std::string& fallback) {
  std::string text;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!text.empty()) text += "; ";
    text += buf;
  }
  return text.empty() ? fallback : text;
}

Result<std::shared_ptr<TlsClientContext>> TlsClientContext::Create(const SecurityOptions& o) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return Status(ErrorCode::INTERNAL_ERROR, TlsErrorText("SSL_CTX_new failed"));
  }
  std::shared_ptr<TlsClientContext> out(new TlsClientContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  auto failed = [](const char* flag, const std::string& file) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("cannot load --{}={}: {}", flag, file,
                                                         TlsErrorText("unknown error")));
  };
  if (SSL_CTX_load_verify_locations(ctx, o.tls_ca.c_str(), nullptr) != 1) {
    return failed("tls_ca", o.tls_ca);
  }
  if (!o.tls_cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, o.tls_cert.c_str()) != 1) {
      return failed("tls_cert", o.tls_cert);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, o.tls_key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      return failed("tls_key", o.tls_key);
    }
  }
  return out;
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

}  // namespace kvpool::rpc
