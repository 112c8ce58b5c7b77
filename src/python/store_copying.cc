// The calls that take or return bytes instead of registered addresses. Values need no
// registration; in standalone mode they pass through the node's staging buffer (one extra copy).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cstring>

#include "python/conversions.h"
#include "python/errors.h"
#include "python/store.h"

namespace py = pybind11;

namespace kvpool::python {
namespace {

std::vector<std::span<const uint8_t>> Spans(const std::vector<ByteView>& views) {
  std::vector<std::span<const uint8_t>> out;
  out.reserve(views.size());
  for (const auto& v : views) out.push_back(v.span());
  return out;
}

std::vector<ByteView> Views(const py::list& values) {
  std::vector<ByteView> out;
  out.reserve(values.size());
  for (py::handle v : values) out.emplace_back(v, /*writable=*/false);
  return out;
}

// 0 when every status is OK, else the first failure's code (Mooncake's put_batch convention).
int FirstFailure(const std::vector<Status>& statuses) {
  for (const auto& s : statuses) {
    if (!s.ok()) return ToPyCode(s);
  }
  return 0;
}

Status LengthMismatch(size_t keys, size_t values) {
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{} keys but {} values; give one value per key", keys, values));
}

}  // namespace

int Store::Put(const std::string& key, py::handle value, const PyReplicateConfig& cfg) {
  py::list values;
  values.append(value);
  return PutBatch({key}, values, cfg);
}

int Store::PutParts(const std::string& key, const py::args& parts, const PyReplicateConfig& cfg) {
  std::vector<ByteView> views;
  size_t total = 0;
  for (py::handle p : parts) {
    views.emplace_back(p, /*writable=*/false);
    total += views.back().size();
  }
  std::vector<uint8_t> joined;
  joined.reserve(total);
  for (const auto& v : views) joined.insert(joined.end(), v.data(), v.data() + v.size());
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  auto core = cfg.ToCore();
  if (!core.ok()) return ToPyCode(core.status());
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->BatchPut({key}, {std::span<const uint8_t>(joined)}, *core);
  }
  return FirstFailure(st);
}

int Store::PutBatch(const Keys& keys, const py::list& values, const PyReplicateConfig& cfg) {
  if (keys.size() != values.size()) return ToPyCode(LengthMismatch(keys.size(), values.size()));
  std::vector<ByteView> views = Views(values);
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  auto core = cfg.ToCore();
  if (!core.ok()) return ToPyCode(core.status());
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    st = (*c)->BatchPut(keys, Spans(views), *core);
  }
  return FirstFailure(st);
}

py::bytes Store::Get(const std::string& key) {
  py::list got = GetBatch({key});
  return got[0].cast<py::bytes>();
}

py::list Store::GetBatch(const Keys& keys) {
  py::list out;
  auto c = client();
  if (!c.ok()) {
    ToPyCode(c.status());
    for (size_t i = 0; i < keys.size(); ++i) out.append(py::bytes());
    return out;
  }
  std::vector<Result<std::vector<uint8_t>>> r;
  {
    py::gil_scoped_release nogil;
    r = (*c)->BatchGet(keys);
  }
  for (const auto& e : r) {
    if (e.ok()) {
      out.append(py::bytes(reinterpret_cast<const char*>(e->data()), e->size()));
    } else {
      ToPyCode(e.status());  // a miss reads as b"" (Mooncake's convention); last_error says why
      out.append(py::bytes());
    }
  }
  return out;
}

py::object Store::GetBuffer(const std::string& key) {
  py::list got = BatchGetBuffer({key});
  return got[0];
}

py::list Store::BatchGetBuffer(const Keys& keys) {
  py::list out;
  auto c = client();
  if (!c.ok()) {
    ToPyCode(c.status());
    for (size_t i = 0; i < keys.size(); ++i) out.append(py::none());
    return out;
  }
  if (keys.empty()) return out;
  std::vector<Result<std::vector<uint8_t>>> r;
  {
    py::gil_scoped_release nogil;
    r = (*c)->BatchGet(keys);
  }
  auto open = session();
  for (auto& one : r) {
    if (!one.ok()) {
      ToPyCode(one.status());
      out.append(py::none());
    } else if (one->empty()) {
      out.append(py::none());  // Mooncake: a zero-length object gives None
    } else {
      out.append(py::cast(BufferHandle{std::move(one).value(), open}));
    }
  }
  return out;
}

std::shared_ptr<const std::atomic<bool>> Store::session() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_;
}

void BufferHandle::CheckOpen() const {
  if (open == nullptr || !open->load()) {
    ThrowStatus(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                       "BufferHandle used after its store was closed"));
  }
}

int Store::Upsert(const std::string& key, py::handle value, const PyReplicateConfig& cfg) {
  py::list values;
  values.append(value);
  return UpsertBatch({key}, values, cfg);
}

int Store::UpsertBatch(const Keys& keys, const py::list& values, const PyReplicateConfig& cfg) {
  if (keys.size() != values.size()) return ToPyCode(LengthMismatch(keys.size(), values.size()));
  std::vector<ByteView> views = Views(values);
  std::vector<std::vector<std::span<const uint8_t>>> parts;
  parts.reserve(views.size());
  for (const auto& v : views) parts.push_back({v.span()});
  return FirstFailure(UpsertCopies(keys, parts, cfg));
}

std::vector<int> Store::BatchUpsertFromBuffers(const Keys& keys, const py::list& values,
                                               const PyReplicateConfig& cfg) {
  if (keys.size() != values.size()) {
    return std::vector<int>(keys.size(), ToPyCode(LengthMismatch(keys.size(), values.size())));
  }
  std::vector<std::vector<ByteView>> views = ByteViewLists(values, /*writable=*/false);
  std::vector<std::vector<std::span<const uint8_t>>> parts;
  parts.reserve(views.size());
  for (const auto& v : views) parts.push_back(Spans(v));
  return ToPyCodes(UpsertCopies(keys, parts, cfg));
}

std::vector<Status> Store::UpsertCopies(
    const Keys& keys, const std::vector<std::vector<std::span<const uint8_t>>>& values,
    const PyReplicateConfig& cfg) {
  auto c = client();
  if (!c.ok()) return std::vector<Status>(keys.size(), c.status());
  auto core = cfg.ToCore();
  if (!core.ok()) return std::vector<Status>(keys.size(), core.status());
  size_t total = 0;
  for (const auto& parts : values) {
    for (const auto& p : parts) total += p.size();
  }
  if (total == 0) {
    return std::vector<Status>(keys.size(),
                               Status(ErrorCode::INVALID_PARAMS, "upsert: every value is empty"));
  }
  // The client upserts only from registered memory: stage the values in memory it accepts
  // (standalone: the host allocator's shared memory), register it for this call, release it.
  bool standalone = IsStandalone();
  std::unique_ptr<uint8_t[]> heap;
  uint8_t* scratch = nullptr;
#if KVPOOL_PY_HAS_STANDALONE
  HostMemAllocator shm;
  if (standalone) {
    Result<void*> p = shm.Alloc(total);
    if (!p.ok()) return std::vector<Status>(keys.size(), p.status());
    scratch = static_cast<uint8_t*>(*p);
  }
#endif
  if (scratch == nullptr) {
    heap.reset(new uint8_t[total]);
    scratch = heap.get();
  }
  std::vector<const void*> ptrs;
  std::vector<size_t> sizes;
  size_t off = 0;
  for (const auto& parts : values) {  // each object's parts joined in place: one copy
    ptrs.push_back(scratch + off);
    size_t start = off;
    for (const auto& p : parts) {
      if (!p.empty()) std::memcpy(scratch + off, p.data(), p.size());
      off += p.size();
    }
    sizes.push_back(off - start);
  }
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    Status reg = (*c)->RegisterBuffer(scratch, total);
    if (reg.ok()) {
      st = (*c)->BatchUpsertFrom(keys, ptrs, sizes, *core);
      (void)(*c)->UnregisterBuffer(scratch);
    } else {
      st.assign(keys.size(), reg);
    }
  }
#if KVPOOL_PY_HAS_STANDALONE
  if (standalone) (void)shm.Free(scratch);
#endif
  (void)standalone;
  return st;
}

std::vector<int> Store::BatchPutFromBuffers(const Keys& keys, const py::list& values,
                                            const PyReplicateConfig& cfg) {
  if (keys.size() != values.size()) {
    return std::vector<int>(keys.size(), ToPyCode(LengthMismatch(keys.size(), values.size())));
  }
  std::vector<std::vector<ByteView>> views = ByteViewLists(values, /*writable=*/false);
  auto c = client();
  if (!c.ok()) return std::vector<int>(keys.size(), ToPyCode(c.status()));
  auto core = cfg.ToCore();
  if (!core.ok()) return std::vector<int>(keys.size(), ToPyCode(core.status()));
  std::vector<Status> st;
  {
    py::gil_scoped_release nogil;
    // An object given in several parts is joined here (the copying path copies anyway).
    std::vector<std::vector<uint8_t>> joined(keys.size());
    std::vector<std::span<const uint8_t>> spans;
    spans.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (views[i].size() == 1) {
        spans.push_back(views[i][0].span());
        continue;
      }
      for (const auto& v : views[i])
        joined[i].insert(joined[i].end(), v.data(), v.data() + v.size());
      spans.emplace_back(joined[i]);
    }
    st = (*c)->BatchPut(keys, spans, *core);
  }
  return ToPyCodes(st);
}

std::vector<int64_t> Store::BatchGetIntoBuffers(const Keys& keys, const py::list& buffers) {
  if (keys.size() != buffers.size()) {
    return std::vector<int64_t>(keys.size(), ToPyCode(LengthMismatch(keys.size(), buffers.size())));
  }
  std::vector<std::vector<ByteView>> views = ByteViewLists(buffers, /*writable=*/true);
  auto c = client();
  if (!c.ok()) return std::vector<int64_t>(keys.size(), ToPyCode(c.status()));
  std::vector<Result<uint64_t>> out;
  {
    py::gil_scoped_release nogil;
    auto got = (*c)->BatchGet(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!got[i].ok()) {
        out.emplace_back(got[i].status());
        continue;
      }
      const std::vector<uint8_t>& bytes = got[i].value();
      size_t capacity = 0;
      for (const auto& v : views[i]) capacity += v.size();
      if (bytes.size() > capacity) {
        out.emplace_back(Status(ErrorCode::BUFFER_OVERFLOW,
                                fmt::format("key={}: object is {} bytes, buffers hold {}", keys[i],
                                            bytes.size(), capacity)));
        continue;
      }
      size_t off = 0;
      for (const auto& v : views[i]) {
        size_t n = std::min(v.size(), bytes.size() - off);
        if (n > 0) std::memcpy(v.data(), bytes.data() + off, n);
        off += n;
      }
      out.emplace_back(static_cast<uint64_t>(bytes.size()));
    }
  }
  return ToPyResults(out);
}

}  // namespace kvpool::python
