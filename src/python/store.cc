#include "python/store.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "client/client_config.h"
#include "python/conversions.h"
#include "python/errors.h"
#include "python/ssd_offload.h"

namespace py = pybind11;

namespace kvpool::python {
namespace {

// "host", "host:port", "[v6]" or "[v6]:port" (Mooncake lets local_hostname carry the port its
// segment listens on). A bare IPv6 address (several colons) has no port.
Status SplitHostPort(const std::string& text, ClientOptions& o) {
  std::string host = text, port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("local_hostname='{}': unbalanced '['", text));
    }
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        return Status(ErrorCode::INVALID_PARAMS,
                      fmt::format("local_hostname='{}': expected ':port' after ']'", text));
      }
      port = text.substr(close + 2);
    }
  } else if (size_t colon = text.find(':');
             colon != std::string::npos && text.find(':', colon + 1) == std::string::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "local_hostname is empty; give the host name or IP peers reach this process by");
  }
  if (!port.empty() || (text.size() > host.size() && text.back() == ':')) {
    bool digits = !port.empty() && port.size() <= 5 &&
                  port.find_first_not_of("0123456789") == std::string::npos;
    unsigned long p = digits ? std::stoul(port) : 0;
    if (p == 0 || p > 65535) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("local_hostname='{}': port '{}' is not 1-65535", text, port));
    }
    o.segment_port = static_cast<uint16_t>(p);
  }
  o.local_hostname = host;
  return Status::Ok();
}

int Fail(const Status& st) {
  LogWarning(st.ToString());
  return ToPyCode(st);
}

template <typename T>
std::vector<T> Repeat(size_t n, T value) {
  return std::vector<T>(n, value);
}

// setup()'s keys besides the client option table (client/client_config.h): Mooncake setup()
// arguments that are no ClientOptions field (metadata service, staging buffer, NIC list alias
// device_name, engine, HTTP server: unused or warned about; SSD offload: onto disk_path/size).
// With the table's names and aliases they are the one list of keys setup() accepts.
constexpr std::array<std::string_view, 10> kPythonLayerKeys = {
    "metadata_server",  "local_buffer_size",         "rdma_devices",     "device_name",
    "engine",           "enable_client_http_server", "client_http_port", "enable_ssd_offload",
    "ssd_offload_path", "ssd_offload_size"};

// A Python value of a table option as the text its setter parses. Strings must be str, bools
// bool, counts, ports and durations int (not bool), sizes an int or a "4gb"-style str; anything
// else is py::cast_error (reported as "wrong type", naming the key).
Result<std::string> OptionText(const ClientOptionDescriptor& d, py::handle v) {
  switch (d.kind) {
    case OptionKind::kString:
      if (!py::isinstance<py::str>(v)) throw py::cast_error("not a str");
      return v.cast<std::string>();
    case OptionKind::kBool:
      if (!py::isinstance<py::bool_>(v)) throw py::cast_error("not a bool");
      return std::string(v.cast<bool>() ? "true" : "false");
    case OptionKind::kSize: {
      auto bytes = SizeFromPy(v, d.name);
      if (!bytes.ok()) return bytes.status();
      return std::to_string(*bytes);
    }
    case OptionKind::kCount:
    case OptionKind::kDurationMs:
    case OptionKind::kPort:
      if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v)) {
        throw py::cast_error("not an int");
      }
      return std::string(py::str(v));
  }
  throw py::cast_error("unknown option kind");
}

// What setup() takes beside ClientOptions: the Python-layer keys above.
struct PythonLayer {
  SsdOffload ssd;
  bool warn_engine = false;
  bool http_server = false;
  int http_port = 9300;
};

// Applies one Python-layer key; py::cast_error on a wrong type.
Status ApplyPythonLayerKey(const std::string& key, py::handle v, PythonLayer& p) {
  if (key == "local_buffer_size") return SizeFromPy(v, key).status();  // checked, not needed
  if (key == "metadata_server" || key == "rdma_devices" || key == "device_name") {
    (void)v.cast<std::string>();  // no role: nodes are found through the master; TCP needs no NIC
  } else if (key == "engine") {
    p.warn_engine = !v.is_none();
  } else if (key == "enable_client_http_server") {
    p.http_server = v.cast<bool>();
  } else if (key == "client_http_port") {
    p.http_port = v.cast<int>();
  } else if (key == "enable_ssd_offload") {
    p.ssd.enabled = v.cast<bool>();
  } else if (key == "ssd_offload_path") {
    p.ssd.path = v.cast<std::string>();
  } else if (key == "ssd_offload_size" && !v.is_none()) {
    auto size = SizeFromPy(v, key);
    if (!size.ok()) return size.status();
    p.ssd.size = *size;
  }
  return Status::Ok();
}

// Applies one table option from its Python value. None keeps the default; local_hostname may
// carry the segment's port ("host:port"). py::cast_error on a wrong type.
Status ApplyTableOption(const ClientOptionDescriptor& d, py::handle v, ClientOptions& o) {
  if (v.is_none()) return Status::Ok();
  if (d.name == "local_hostname") {
    if (!py::isinstance<py::str>(v)) throw py::cast_error("not a str");
    return SplitHostPort(v.cast<std::string>(), o);
  }
  auto text = OptionText(d, v);
  if (!text.ok()) return text.status();
  return d.set(*text, o);
}

// A Python value of the timeout option `key` (the table's syntax and bounds) into `out`, read
// back from `field`; None leaves `out` (the default) alone.
Status TimeoutFromPy(py::handle v, const char* key, std::chrono::milliseconds ClientOptions::*field,
                     std::chrono::milliseconds& out) {
  if (v.is_none()) return Status::Ok();
  ClientOptions parsed;
  try {
    KVPOOL_RETURN_IF_ERROR(ApplyTableOption(*FindClientOption(key), v, parsed));
  } catch (const py::cast_error&) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("{}={} must be an int number of milliseconds", key, std::string(py::repr(v))));
  }
  out = parsed.*field;
  return Status::Ok();
}

}  // namespace

Store::~Store() {
  // Close without the GIL held by this frame's caller being needed: Close() only talks to the
  // master with its own deadline.
  std::shared_ptr<Client> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = std::move(client_);
  }
  if (c != nullptr) (void)c->Close();
#if KVPOOL_PY_HAS_STANDALONE
  if (pool_allocator_ != nullptr) {
    for (void* p : pool_allocations_) (void)pool_allocator_->Free(p);
  }
#endif
}

Result<std::shared_ptr<Client>> Store::client() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_ == nullptr) {
    return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                  "store is not set up (call setup() or setup_dummy() first) or was closed");
  }
  return client_;
}

int Store::Install(Result<std::unique_ptr<Client>> setup, const std::string& hostname,
                   bool standalone) {
  if (!setup.ok()) return Fail(setup.status());
  std::shared_ptr<Client> fresh = std::move(setup).value();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (client_ == nullptr) {
      client_ = fresh;
      session_ = std::make_shared<std::atomic<bool>>(true);
      hostname_ = hostname;
      standalone_ = standalone;
      return 0;
    }
  }
  // Lost a race with another setup(): keep the first client.
  py::gil_scoped_release nogil;
  (void)fresh->Close();
  return ToPyCode(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                         "store is already set up; close() it before setting it up again"));
}

int Store::Setup(const py::dict& config) {
  if (client().ok()) {
    return Fail(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                       "store is already set up; close() it before setting it up again"));
  }
  ClientOptions o;
  o.local_hostname = "localhost";   // Mooncake's default
  o.master_server_address.clear();  // required here: no default master
  PythonLayer layer;
  for (auto item : config) {
    const std::string key = py::str(item.first);
    py::handle v = item.second;
    const ClientOptionDescriptor* option = FindClientOption(key);
    if (option == nullptr && std::ranges::find(kPythonLayerKeys, key) == kPythonLayerKeys.end()) {
      return Fail(
          Status(ErrorCode::INVALID_PARAMS,
                 fmt::format("setup: unknown key '{}'; did you mean '{}'? (the client options are "
                             "listed by kvpool._kvpool.client_options())",
                             key, ClosestClientOption(key, kPythonLayerKeys))));
    }
    try {
      Status st =
          option != nullptr ? ApplyTableOption(*option, v, o) : ApplyPythonLayerKey(key, v, layer);
      if (!st.ok()) return Fail(st);
    } catch (const py::cast_error&) {
      return Fail(Status(ErrorCode::INVALID_PARAMS, fmt::format("setup: '{}'={} has the wrong type",
                                                                key, std::string(py::repr(v)))));
    }
  }
  if (o.master_server_address.empty()) {
    return Fail(Status(ErrorCode::INVALID_PARAMS,
                       "setup: 'master_server_addr' (the kvpool master, host:port) is required"));
  }
  if (layer.warn_engine) {
    LogWarning(
        "setup(engine=...): kvpool moves bytes with its own transports; the Mooncake "
        "transfer engine passed in is not used");
  }
  if (layer.http_server) {
    LogWarning(
        fmt::format("setup(enable_client_http_server=True, client_http_port={}): kvpool "
                    "clients serve no HTTP endpoint; use `kvpool stat` or the store's "
                    "stat() for metrics",
                    layer.http_port));
  }
  std::optional<std::string> env_path = SetupSettingFromEnv("ssd_offload_path");
  if (Status st = ApplySsdOffload(layer.ssd, env_path ? env_path->c_str() : nullptr,
                                  o.global_segment_size, &o);
      !st.ok()) {
    return Fail(st);
  }
  Result<std::unique_ptr<Client>> r = Status();
  {
    py::gil_scoped_release nogil;
    r = Client::Setup(o);
  }
  if (!r.ok() && layer.ssd.enabled) r = NameSsdSettings(r.status());
  return Install(std::move(r), o.local_hostname, /*standalone=*/false);
}

int Store::SetupDummy(py::handle mem_pool_size, py::handle local_buffer_size,
                      const std::string& server_address, bool verify_checksum,
                      py::handle rpc_timeout_ms, py::handle transfer_timeout_ms) {
#if KVPOOL_PY_HAS_STANDALONE
  if (client().ok()) {
    return Fail(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                       "store is already set up; close() it before setting it up again"));
  }
  auto pool = SizeFromPy(mem_pool_size, "mem_pool_size");
  if (!pool.ok()) return Fail(pool.status());
  auto local = SizeFromPy(local_buffer_size, "local_buffer_size");
  if (!local.ok()) return Fail(local.status());
  StandaloneOptions so;
  so.server_address = server_address;  // "" is an error, not the default (StandaloneOptions)
  so.mem_pool_size = *pool;
  so.local_buffer_size = *local;
  so.verify_checksum = verify_checksum;
  if (Status st = TimeoutFromPy(rpc_timeout_ms, "rpc_timeout_ms", &ClientOptions::rpc_timeout,
                                so.rpc_timeout);
      !st.ok()) {
    return Fail(st);
  }
  if (Status st = TimeoutFromPy(transfer_timeout_ms, "transfer_timeout_ms",
                                &ClientOptions::transfer_timeout, so.transfer_timeout);
      !st.ok()) {
    return Fail(st);
  }
  Result<std::unique_ptr<Client>> r = Status();
  {
    py::gil_scoped_release nogil;
    r = Client::SetupStandalone(so);
  }
  return Install(std::move(r), so.server_address, /*standalone=*/true);
#else
  (void)rpc_timeout_ms;
  (void)transfer_timeout_ms;
  return Fail(Status(ErrorCode::NOT_SUPPORTED,
                     "setup_dummy: this kvpool build has no standalone mode; use setup()"));
#endif
}

int Store::Close() {
  std::shared_ptr<Client> c;
#if KVPOOL_PY_HAS_STANDALONE
  std::vector<void*> allocations;
  std::shared_ptr<HostMemAllocator> allocator;
#endif
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = std::move(client_);
    client_ = nullptr;
    if (session_ != nullptr) session_->store(false);  // this session's BufferHandles now refuse
    session_ = nullptr;
#if KVPOOL_PY_HAS_STANDALONE
    allocations.swap(pool_allocations_);
    allocator = pool_allocator_;
#endif
  }
  if (c == nullptr) return 0;
  Status st;
  {
    py::gil_scoped_release nogil;
    st = c->Close();
  }
#if KVPOOL_PY_HAS_STANDALONE
  for (void* p : allocations) (void)allocator->Free(p);
#endif
  return ToPyCode(st);
}

int Store::HealthCheck() {
  auto c = client();
  if (!c.ok()) return 1;
  py::gil_scoped_release nogil;
  return (*c)->HealthCheck();
}

std::string Store::GetHostname() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_ == nullptr) return "";
  std::string segment = client_->SegmentName();
  return segment.empty() ? hostname_ : segment;
}

bool Store::IsStandalone() const {
  std::lock_guard<std::mutex> lock(mu_);
  return client_ != nullptr && standalone_;
}

int Store::RegisterBuffer(uintptr_t ptr, uint64_t size) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  Status st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->RegisterBuffer(AsPointer(ptr), size);
  }
  return ToPyCode(st);
}

int Store::UnregisterBuffer(uintptr_t ptr) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  Status st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->UnregisterBuffer(AsPointer(ptr));
  }
  return ToPyCode(st);
}

int Store::PutFrom(const std::string& key, uintptr_t ptr, uint64_t size,
                   const PyReplicateConfig& cfg) {
  return BatchPutFrom({key}, {ptr}, {size}, cfg)[0];
}

int64_t Store::GetInto(const std::string& key, uintptr_t ptr, uint64_t size) {
  return BatchGetInto({key}, {ptr}, {size})[0];
}

namespace {
// BatchPutFrom and BatchUpsertFrom: one ObjectBatch, made here from the Python lists.
std::vector<int> WriteBatch(const Result<std::shared_ptr<Client>>& c, Store::Keys keys,
                            const Store::Addresses& ptrs, const Store::Sizes& sizes,
                            const PyReplicateConfig& cfg, bool upsert) {
  if (!c.ok()) return Repeat(keys.size(), ToPyCode(c.status()));
  auto core = cfg.ToCore();
  if (!core.ok()) return Repeat(keys.size(), ToPyCode(core.status()));
  const size_t n = keys.size();
  auto batch = OneBufferBatch(std::move(keys), ptrs, sizes);
  if (!batch.ok()) return Repeat(n, ToPyCode(batch.status()));
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->Put(*batch, *core, upsert);
  }
  return ToPyCodes(st);
}
}  // namespace

std::vector<int> Store::BatchPutFrom(Keys keys, const Addresses& ptrs, const Sizes& sizes,
                                     const PyReplicateConfig& cfg) {
  return WriteBatch(client(), std::move(keys), ptrs, sizes, cfg, /*upsert=*/false);
}

std::vector<int64_t> Store::BatchGetInto(Keys keys, const Addresses& ptrs, const Sizes& sizes) {
  auto c = client();
  if (!c.ok()) return Repeat<int64_t>(keys.size(), ToPyCode(c.status()));
  const size_t n = keys.size();
  auto batch = OneBufferBatch(std::move(keys), ptrs, sizes);
  if (!batch.ok()) return Repeat<int64_t>(n, ToPyCode(batch.status()));
  std::vector<Result<uint64_t>> r;
  {
    py::gil_scoped_release nogil;
    r = (*c)->Get(*batch);
  }
  return ToPyResults(r);
}

namespace {
std::vector<std::vector<size_t>> ToSizeLists(const std::vector<std::vector<uint64_t>>& sizes) {
  std::vector<std::vector<size_t>> out;
  out.reserve(sizes.size());
  for (const auto& s : sizes) out.emplace_back(s.begin(), s.end());
  return out;
}
}  // namespace

std::vector<int> Store::BatchPutFromMultiBuffers(const Keys& keys,
                                                 const std::vector<Addresses>& ptrs,
                                                 const std::vector<Sizes>& sizes,
                                                 const PyReplicateConfig& cfg) {
  auto c = client();
  if (!c.ok()) return Repeat(keys.size(), ToPyCode(c.status()));
  auto core = cfg.ToCore();
  if (!core.ok()) return Repeat(keys.size(), ToPyCode(core.status()));
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->BatchPutFromMultiBuffers(keys, AsConstPointerLists(ptrs), ToSizeLists(sizes), *core);
  }
  return ToPyCodes(st);
}

std::vector<int64_t> Store::BatchGetIntoMultiBuffers(const Keys& keys,
                                                     const std::vector<Addresses>& ptrs,
                                                     const std::vector<Sizes>& sizes) {
  auto c = client();
  if (!c.ok()) return Repeat<int64_t>(keys.size(), ToPyCode(c.status()));
  std::vector<Result<uint64_t>> r;
  {
    py::gil_scoped_release nogil;
    r = (*c)->BatchGetIntoMultiBuffers(keys, AsPointerLists(ptrs), ToSizeLists(sizes));
  }
  return ToPyResults(r);
}

int Store::UpsertFrom(const std::string& key, uintptr_t ptr, uint64_t size,
                      const PyReplicateConfig& cfg) {
  return BatchUpsertFrom({key}, {ptr}, {size}, cfg)[0];
}

std::vector<int> Store::BatchUpsertFrom(Keys keys, const Addresses& ptrs, const Sizes& sizes,
                                        const PyReplicateConfig& cfg) {
  return WriteBatch(client(), std::move(keys), ptrs, sizes, cfg, /*upsert=*/true);
}

int Store::IsExist(const std::string& key) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  Result<bool> r = Status();
  {
    py::gil_scoped_release nogil;
    r = (*c)->IsExist(key);
  }
  return r.ok() ? (r.value() ? 1 : 0) : ToPyCode(r.status());
}

std::vector<int> Store::BatchIsExist(const KeyViews& keys) {
  auto c = client();
  if (!c.ok()) return Repeat(keys.size(), ToPyCode(c.status()));
  std::vector<Result<bool>> r;
  {
    py::gil_scoped_release nogil;
    r = (*c)->BatchIsExist(keys.views());
  }
  std::vector<int> out;
  out.reserve(r.size());
  for (const auto& e : r) out.push_back(e.ok() ? (e.value() ? 1 : 0) : ToPyCode(e.status()));
  return out;
}

int64_t Store::BatchExistsPrefix(const KeyViews& keys) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  Result<size_t> r = Status();
  {
    py::gil_scoped_release nogil;
    r = (*c)->ExistsPrefix(keys.views());
  }
  return r.ok() ? static_cast<int64_t>(r.value()) : ToPyCode(r.status());
}

int64_t Store::GetSize(const std::string& key) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  Result<uint64_t> r = Status();
  {
    py::gil_scoped_release nogil;
    r = (*c)->GetSize(key);
  }
  return ToPyResult(r);
}

int Store::Remove(const std::string& key, bool force) { return BatchRemove({key}, force)[0]; }

std::vector<int> Store::BatchRemove(const Keys& keys, bool force) {
  auto c = client();
  if (!c.ok()) return Repeat(keys.size(), ToPyCode(c.status()));
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->BatchRemove(keys, force);
  }
  return ToPyCodes(st);
}

int64_t Store::RemoveAll(bool force) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  Result<uint64_t> r = Status();
  {
    py::gil_scoped_release nogil;
    r = (*c)->RemoveAll(force);
  }
  return ToPyResult(r);
}

uintptr_t Store::AllocFromMemPool(py::handle size_obj) {
#if KVPOOL_PY_HAS_STANDALONE
  auto c = client();
  if (!c.ok()) ThrowStatus(c.status());
  if (!IsStandalone()) {
    ThrowStatus(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_MODE,
                       "alloc_from_mem_pool: only a standalone store (setup_dummy) has a memory "
                       "pool; use HostMemAllocator().alloc(size) and register_buffer"));
  }
  auto size = SizeFromPy(size_obj, "size");
  if (!size.ok()) ThrowStatus(size.status());
  std::shared_ptr<HostMemAllocator> allocator;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_allocator_ == nullptr) pool_allocator_ = std::make_shared<HostMemAllocator>();
    allocator = pool_allocator_;
  }
  Result<void*> p = allocator->Alloc(*size);
  if (!p.ok()) ThrowStatus(p.status());
  Status st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->RegisterBuffer(*p, *size);
  }
  if (!st.ok()) {
    (void)allocator->Free(*p);
    ThrowStatus(st);
  }
  std::lock_guard<std::mutex> lock(mu_);
  pool_allocations_.push_back(*p);
  return reinterpret_cast<uintptr_t>(*p);
#else
  ThrowStatus(Status(ErrorCode::NOT_SUPPORTED,
                     "alloc_from_mem_pool: this kvpool build has no standalone mode"));
#endif
}

}  // namespace kvpool::python
