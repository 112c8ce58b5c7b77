// A client's security settings (ClientOptions' secret and TLS fields) resolved once in Init:
// the secret read from its file or the environment, the TLS context loaded.
#pragma once

#include "kvpool/client.h"
#include "rpc/connection.h"
#include "rpc/security_options.h"

namespace kvpool::client {

struct ClientSecurity {
  rpc::SecurityOptions server;  // for an embedded client's segment server
  rpc::ConnectOptions connect;  // for its connections to the master and nodes
};

// Errors: FILE_NOT_FOUND / FILE_READ_FAIL for the secret file or a TLS file; INVALID_PARAMS
// for incomplete TLS settings or a file OpenSSL cannot load.
Result<ClientSecurity> ResolveClientSecurity(const ClientOptions& options);

// Copies flags parsed by rpc::AddSecurityFlags into a ClientOptions (node, CLI, bench),
// --insecure included (it matters only to a client that serves a segment: a node).
void ApplySecurityFlags(const rpc::SecurityOptions& flags, ClientOptions& options);

}  // namespace kvpool::client
