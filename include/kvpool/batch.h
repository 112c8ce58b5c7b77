// ObjectBatch: the one form a batch of puts or gets takes from where it enters (the Client's
// vector calls, the Python module, the CLI) down to the transfer that moves its bytes.
//
// Each object is a key and the caller's memory that holds its bytes (put) or receives them
// (get), as one or more buffers whose concatenation is the object (e.g. one page's layer
// slices). The buffers of every object sit in one array, so a batch of n single-buffer objects
// costs three allocations, not n.
//
// Client::Put and Client::Get validate a batch once (keys, sizes, the placement's replica
// count and group ids; the memory against the registered regions) and pass it on unchanged:
// the embedded client hands each object's buffers to the transfer plan, the standalone client
// turns them into slices of its shared regions.
//
// Ownership: the batch owns its keys (copied or moved in) and the buffer addresses, never the
// memory they point to, which the caller keeps valid until the call taking the batch returns.
// Threading: a plain value; a const batch may be read from several threads at once.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvpool {

class ObjectBatch {
 public:
  ObjectBatch() = default;

  // Reserves room for `objects` objects with `buffers` buffers in all.
  void Reserve(size_t objects, size_t buffers) {
    keys_.reserve(objects);
    ends_.reserve(objects);
    buffers_.reserve(buffers);
  }
  // Appends an object with no buffers yet (AddBuffer adds them); returns its index.
  size_t AddObject(std::string key) {
    keys_.push_back(std::move(key));
    ends_.push_back(buffers_.size());
    return keys_.size() - 1;
  }
  // Appends [data, data+size) to the last object. REQUIRES: AddObject was called.
  void AddBuffer(const void* data, size_t size) {
    buffers_.push_back({const_cast<void*>(data), size});
    ends_.back() = buffers_.size();
  }
  // An object of one buffer.
  size_t Add(std::string key, const void* data, size_t size) {
    const size_t i = AddObject(std::move(key));
    AddBuffer(data, size);
    return i;
  }

  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::string& key(size_t i) const { return keys_[i]; }
  // Object i's buffers, in order (empty when it was given none).
  std::span<const iovec> buffers(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::span<const iovec>(buffers_).subspan(begin, ends_[i] - begin);
  }
  // Object i's length: the sum of its buffers' sizes.
  uint64_t bytes(size_t i) const {
    uint64_t n = 0;
    for (const iovec& b : buffers(i)) n += b.iov_len;
    return n;
  }
  // Objects [begin, end) as a batch of their own (a request of a batch too large for one frame).
  ObjectBatch Part(size_t begin, size_t end) const {
    ObjectBatch out;
    out.Reserve(end - begin, 0);
    for (size_t i = begin; i < end; ++i) out.CopyObject(*this, i);
    return out;
  }
  // Objects `indices`, in that order, as a batch of their own (the keys a retry puts again).
  ObjectBatch Subset(const std::vector<size_t>& indices) const {
    ObjectBatch out;
    out.Reserve(indices.size(), 0);
    for (size_t i : indices) out.CopyObject(*this, i);
    return out;
  }

 private:
  void CopyObject(const ObjectBatch& from, size_t i) {
    AddObject(from.keys_[i]);
    for (const iovec& b : from.buffers(i)) AddBuffer(b.iov_base, b.iov_len);
  }

  std::vector<std::string> keys_;
  std::vector<iovec> buffers_;  // every object's buffers, object after object
  std::vector<size_t> ends_;    // one past object i's last buffer in buffers_
};

}  // namespace kvpool
