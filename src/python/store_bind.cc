// The Python face of Store: Mooncake Store's method names, argument order and defaults
// (reference: ../shared/reference/mooncake-python-api.md), plus a few kvpool extensions.
#include <pybind11/stl.h>

#include "python/errors.h"
#include "python/store.h"

namespace py = pybind11;

namespace kvpool::python {
namespace {

constexpr const char* kStoreDoc = R"doc(A client of a kvpool pool with Mooncake Store's Python API.

Set up with setup(...) (embedded: this process may contribute memory to the pool) or
setup_dummy(...) (standalone: attach to a local `kvpool node`). Calls return 0 / a byte count on
success and a negative error code on failure (kvpool.ErrorCode); kvpool.last_error() gives the
message of the latest failure on the calling thread. Addresses passed as ints must lie inside
buffers registered with register_buffer; others are refused before any byte moves.)doc";

// pybind11's buffer getter may not throw (an exception there aborts the process), so the
// closed-store check runs in front of it and fails the export with a Python error instead.
// Set once when the module is imported, read-only afterwards.
getbufferproc g_pybind_getbuffer = nullptr;

int GuardedGetBuffer(PyObject* obj, Py_buffer* view, int flags) {
  try {
    py::cast<const BufferHandle&>(py::handle(obj)).CheckOpen();
  } catch (py::error_already_set& e) {
    e.restore();
    return -1;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return -1;
  }
  return g_pybind_getbuffer(obj, view, flags);
}

void BindBufferHandle(py::module_& m) {
  py::class_<BufferHandle> cls(m, "BufferHandle", py::buffer_protocol(),
                               "An object's bytes as returned by get_buffer(); supports the buffer "
                               "protocol (memoryview, numpy.frombuffer, torch.frombuffer).");
  cls.def_buffer([](BufferHandle& b) {
       return py::buffer_info(b.bytes.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                              {b.bytes.size()}, {1});
     })
      .def("ptr",
           [](const BufferHandle& b) {
             b.CheckOpen();
             return reinterpret_cast<uintptr_t>(b.bytes.data());
           })
      .def("size",
           [](const BufferHandle& b) {
             b.CheckOpen();
             return b.bytes.size();
           })
      .def("__len__",
           [](const BufferHandle& b) {
             b.CheckOpen();
             return b.bytes.size();
           })
      .def("tobytes", [](const BufferHandle& b) {
        b.CheckOpen();
        return py::bytes(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
      });
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  g_pybind_getbuffer = type->tp_as_buffer->bf_getbuffer;
  type->tp_as_buffer->bf_getbuffer = GuardedGetBuffer;
}

}  // namespace

void BindStore(py::module_& m) {
  BindBufferHandle(m);
  using S = Store;
  const PyReplicateConfig kDefaultConfig;
  py::class_<S> cls(m, "KVPoolStore", kStoreDoc);
  cls.def(py::init<>());

  // --- set-up ---
  cls.def(
      "setup",
      [](S& s, const std::string& local_hostname, const std::string& metadata_server,
         py::object global_segment_size, py::object local_buffer_size, const std::string& protocol,
         const std::string& rdma_devices, const std::string& master_server_addr, py::object engine,
         bool enable_ssd_offload, const std::string& ssd_offload_path, const std::string& tenant_id,
         bool enable_client_http_server, int client_http_port, bool verify_checksum,
         const std::string& tenant_key_file, py::object rpc_timeout_ms,
         py::object transfer_timeout_ms, py::object ssd_offload_size) {
        py::dict config;
        config["local_hostname"] = local_hostname;
        config["metadata_server"] = metadata_server;
        config["global_segment_size"] = global_segment_size;
        config["local_buffer_size"] = local_buffer_size;
        config["protocol"] = protocol;
        config["rdma_devices"] = rdma_devices;
        config["master_server_addr"] = master_server_addr;
        config["engine"] = engine;
        config["enable_ssd_offload"] = enable_ssd_offload;
        config["ssd_offload_path"] = ssd_offload_path;
        config["tenant_id"] = tenant_id;
        config["enable_client_http_server"] = enable_client_http_server;
        config["client_http_port"] = client_http_port;
        config["verify_checksum"] = verify_checksum;
        config["tenant_key_file"] = tenant_key_file;
        config["rpc_timeout_ms"] = rpc_timeout_ms;
        config["transfer_timeout_ms"] = transfer_timeout_ms;
        config["ssd_offload_size"] = ssd_offload_size;
        return s.Setup(config);
      },
      py::arg("local_hostname"), py::arg("metadata_server"), py::arg("global_segment_size"),
      py::arg("local_buffer_size"), py::arg("protocol"), py::arg("rdma_devices"),
      py::arg("master_server_addr"), py::arg("engine") = py::none(),
      py::arg("enable_ssd_offload") = false, py::arg("ssd_offload_path") = "",
      py::arg("tenant_id") = "default", py::arg("enable_client_http_server") = false,
      py::arg("client_http_port") = 9300, py::arg("verify_checksum") = false,
      py::arg("tenant_key_file") = "", py::arg("rpc_timeout_ms") = py::none(),
      py::arg("transfer_timeout_ms") = py::none(), py::arg("ssd_offload_size") = py::none(),
      "Embedded mode: register with the master at master_server_addr and contribute "
      "global_segment_size bytes of this process's memory (0: none). Sizes may be ints or "
      "strings (\"4gb\"). metadata_server, rdma_devices and local_buffer_size are accepted and "
      "not needed. verify_checksum: gets check each object's XXH3 checksum and report "
      "CHECKSUM_MISMATCH (-801) instead of bad bytes. tenant_id: the key namespace (\"default\": "
      "the default tenant); tenant_key_file: that tenant's key (else $KVPOOL_TENANT_KEY_FILE or "
      "$KVPOOL_TENANT_KEY), which requires global_segment_size 0 (docs/security.md). "
      "rpc_timeout_ms (default 5000): deadline of each call to the master; transfer_timeout_ms "
      "(default 30000): deadline of a batch's data transfers, which is how long a hung node "
      "(e.g. SIGSTOPped) can stall a batch before its keys fail with RPC_TIMEOUT. "
      "enable_ssd_offload: a disk tier below the segment, in ssd_offload_path (else "
      "$MOONCAKE_OFFLOAD_FILE_STORAGE_PATH), of ssd_offload_size bytes (default 4 x "
      "global_segment_size; docs/operations.md, \"Disk tier\"). Returns 0 or a negative code.");
  cls.def("setup", &S::Setup, py::arg("config"),
          "setup() with the same fields as a dict (sizes may be \"512MB\"-style strings; "
          "'master_server_addr' or 'master_server_address' is required). Also takes "
          "'auth_secret_file', 'tenant_key_file', 'tls_ca_file', 'tls_cert_file', 'tls_key_file', "
          "'rpc_timeout_ms', 'transfer_timeout_ms', 'ssd_offload_size' "
          "(docs/security.md; the secret also comes from $KVPOOL_AUTH_SECRET). Unknown keys are "
          "refused with INVALID_PARAMS.");
  cls.def("setup_dummy", &S::SetupDummy, py::arg("mem_pool_size"), py::arg("local_buffer_size"),
          py::arg("server_address") = "127.0.0.1:50052", py::arg("verify_checksum") = false,
          py::arg("rpc_timeout_ms") = py::none(), py::arg("transfer_timeout_ms") = py::none(),
          "Standalone mode: attach to the kvpool node at server_address: HOST:PORT with the "
          "node's --port (required) and a host of this machine, or the node's socket as @name "
          "or /path; anything else (\"\", a missing port, another machine's or an unresolvable "
          "host) is INVALID_PARAMS. rpc_timeout_ms / transfer_timeout_ms: as in setup(). Register "
          "memory from HostMemAllocator for zero-copy calls; copying calls move data through "
          "a staging buffer of local_buffer_size bytes shared with the node. verify_checksum: "
          "the node checks each object's checksum on gets (CHECKSUM_MISMATCH, -801).");
  cls.def("close", &S::Close, "Detach from the pool; idempotent. Returns 0 or a negative code.");
  cls.def("health_check", &S::HealthCheck,
          "0 healthy, 1 not set up (or closed), 2 master / storage node unreachable.");
  cls.def("get_hostname", &S::GetHostname,
          "This client's segment name (\"host:port\") in embedded mode, the local host name "
          "when it contributes no segment, the node address in standalone mode; \"\" before "
          "setup.");
  cls.def("is_standalone", &S::IsStandalone, "True when set up with setup_dummy().");
  cls.def("__enter__", [](py::object self) { return self; });
  cls.def("__exit__", [](S& s, py::args) {
    s.Close();
    return false;
  });

  // --- registration and zero-copy calls ---
  cls.def("register_buffer", &S::RegisterBuffer, py::arg("buffer_ptr"), py::arg("size"));
  cls.def("unregister_buffer", &S::UnregisterBuffer, py::arg("buffer_ptr"));
  cls.def("put_from", &S::PutFrom, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
          py::arg("config") = kDefaultConfig, "0 or a negative code.");
  cls.def("get_into", &S::GetInto, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
          "Bytes read, or a negative code (BUFFER_OVERFLOW when size < the object).");
  cls.def("batch_put_from", &S::BatchPutFrom, py::arg("keys"), py::arg("buffer_ptrs"),
          py::arg("sizes"), py::arg("config") = kDefaultConfig);
  cls.def("batch_get_into", &S::BatchGetInto, py::arg("keys"), py::arg("buffer_ptrs"),
          py::arg("sizes"));
  cls.def("batch_put_from_multi_buffers", &S::BatchPutFromMultiBuffers, py::arg("keys"),
          py::arg("all_buffer_ptrs"), py::arg("all_sizes"), py::arg("config") = kDefaultConfig,
          "Object i is the concatenation of its buffers.");
  cls.def(
      "batch_get_into_multi_buffers",
      [](S& s, const S::Keys& keys, const std::vector<S::Addresses>& ptrs,
         const std::vector<S::Sizes>& sizes, bool /*prefer_alloc_in_same_node*/) {
        return s.BatchGetIntoMultiBuffers(keys, ptrs, sizes);
      },
      py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
      py::arg("prefer_alloc_in_same_node") = false,
      "Object i is scattered over its buffers in order. prefer_alloc_in_same_node is accepted "
      "for compatibility (reads always pick the nearest replica).");
  cls.def("upsert_from", &S::UpsertFrom, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
          py::arg("config") = kDefaultConfig, "Like put_from but replaces an existing object.");
  cls.def("batch_upsert_from", &S::BatchUpsertFrom, py::arg("keys"), py::arg("buffer_ptrs"),
          py::arg("sizes"), py::arg("config") = kDefaultConfig);

  // --- copying calls ---
  cls.def("put", &S::Put, py::arg("key"), py::arg("value"), py::arg("config") = kDefaultConfig,
          "value: bytes or any C-contiguous buffer. 0 or a negative code.");
  cls.def(
      "put_parts",
      [](S& s, const std::string& key, py::args parts, py::kwargs kwargs) {
        PyReplicateConfig cfg;
        for (auto kv : kwargs) {
          std::string name = py::str(kv.first);
          if (name != "config") {
            throw py::type_error("put_parts() got an unexpected keyword argument '" + name + "'");
          }
          cfg = kv.second.cast<PyReplicateConfig>();
        }
        return s.PutParts(key, parts, cfg);
      },
      py::arg("key"), "put_parts(key, *parts, config=ReplicateConfig()): one object from parts.");
  cls.def("put_batch", &S::PutBatch, py::arg("keys"), py::arg("values"),
          py::arg("config") = kDefaultConfig, "0 when all succeed, else the first failure's code.");
  cls.def("get", &S::Get, "The object's bytes; b\"\" on a miss or failure.");
  cls.def("get_batch", &S::GetBatch);
  cls.def("get_buffer", &S::GetBuffer,
          "A BufferHandle with the object's bytes, or None on a miss, an empty object or a "
          "failure (kvpool.last_error() says which).");
  cls.def("batch_get_buffer", &S::BatchGetBuffer,
          "One BufferHandle or None per key, in one batch.");
  cls.def("upsert", &S::Upsert, py::arg("key"), py::arg("value"),
          py::arg("config") = kDefaultConfig);
  cls.def("upsert_batch", &S::UpsertBatch, py::arg("keys"), py::arg("values"),
          py::arg("config") = kDefaultConfig);
  cls.def("batch_put_from_buffers", &S::BatchPutFromBuffers, py::arg("keys"), py::arg("values"),
          py::arg("config") = kDefaultConfig,
          "kvpool: copying batch put with per-key results; values[i] is a buffer or a list of "
          "buffers joined in order.");
  cls.def("batch_upsert_from_buffers", &S::BatchUpsertFromBuffers, py::arg("keys"),
          py::arg("values"), py::arg("config") = kDefaultConfig,
          "kvpool: copying batch upsert with per-key results (0 or a negative code); "
          "values[i] is a buffer or a list of buffers joined in order.");
  cls.def("batch_get_into_buffers", &S::BatchGetIntoBuffers, py::arg("keys"), py::arg("buffers"),
          "kvpool: copying batch get into writable buffers (unregistered memory is fine); "
          "bytes read per key or a negative code.");

  // --- queries and removal ---
  cls.def("is_exist", &S::IsExist, "1 exists, 0 not, negative on error.");
  cls.def("batch_is_exist", &S::BatchIsExist, py::arg("keys"));
  cls.def("batch_exists_prefix", &S::BatchExistsPrefix, py::arg("keys"),
          "kvpool: how many LEADING keys exist (one round trip, answered by the master), or a "
          "negative code.");
  cls.def("get_size", &S::GetSize, "The object's size in bytes, or negative.");
  cls.def("remove", &S::Remove, py::arg("key"), py::arg("force") = false);
  cls.def("batch_remove", &S::BatchRemove, py::arg("keys"), py::arg("force") = false);
  cls.def("remove_by_regex", &S::RemoveByRegex, py::arg("regex_pattern"), py::arg("force") = false,
          "Removes this tenant's complete objects whose key matches the ECMAScript regex "
          "(searched anywhere in the key); leased ones only with force, pending ones skipped. "
          "The master scans in bounded pages. The count removed, or INVALID_PARAMS (-600) for a "
          "pattern that does not compile, or another negative code.");
  cls.def("list_keys", &S::ListKeys, py::arg("pattern") = "", py::arg("max_keys") = 0,
          py::arg("page_size") = 0,
          "kvpool: this tenant's complete objects' keys matching the ECMAScript regex pattern "
          "(\"\": all), at most max_keys (0: all), fetched page_size (0: 1000, at most 10000) "
          "keys per master request; in the master's scan order (not sorted). A list of str, or "
          "a negative code.");
  cls.def("remove_all", &S::RemoveAll, py::arg("force") = false,
          "Removes every complete object (leased ones only with force); the count removed.");
  cls.def("stat", &S::Stat,
          "kvpool: the pool as the master sees it (capacity, used, object_count, segments...). "
          "Raises KVPoolError on failure.");
  cls.def("alloc_from_mem_pool", &S::AllocFromMemPool,
          "Standalone mode: shared memory the node can reach, already registered; freed at "
          "close(). Raises KVPoolError on failure.");

  m.attr("MooncakeDistributedStore") = cls;
}

}  // namespace kvpool::python
