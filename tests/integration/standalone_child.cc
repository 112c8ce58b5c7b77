// A standalone client in its own process, for tests that need a second engine or one to kill.
//   standalone_child hold PORT BYTES          attach, register BYTES of host memory, print READY,
//                                             then heartbeat until killed
//   standalone_child put PORT PREFIX COUNT SIZE   put COUNT pages PREFIX/i of SIZE bytes
//                                             (contents: FillPage), print DONE n, exit 0 if all
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kvpool/client.h"
#include "kvpool/host_allocator.h"
#include "test_bytes.h"

namespace {

void Fill(const std::string& key, uint8_t* p, size_t n) {
  kvpool::testing::FillObject(key, 0, p, n);
}

int Fail(const char* what, const kvpool::Status& st) {
  std::printf("FAILED %s: %s\n", what, st.ToString().c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string mode = argv[1];
  kvpool::StandaloneOptions o;
  o.server_address = std::string("127.0.0.1:") + argv[2];
  o.heartbeat_interval = std::chrono::milliseconds(200);
  auto client = kvpool::Client::SetupStandalone(o);
  if (!client.ok()) return Fail("setup", client.status());
  kvpool::HostMemAllocator alloc;
  if (mode == "hold" && argc == 4) {
    size_t bytes = std::strtoull(argv[3], nullptr, 10);
    auto mem = alloc.Alloc(bytes);
    if (!mem.ok()) return Fail("alloc", mem.status());
    std::memset(*mem, 1, bytes);
    kvpool::Status st = (*client)->RegisterBuffer(*mem, bytes);
    if (!st.ok()) return Fail("register", st);
    std::printf("READY\n");
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (mode == "put" && argc == 6) {
    const std::string prefix = argv[3];
    size_t count = std::strtoull(argv[4], nullptr, 10);
    size_t size = std::strtoull(argv[5], nullptr, 10);
    auto mem = alloc.Alloc(count * size);
    if (!mem.ok()) return Fail("alloc", mem.status());
    kvpool::Status st = (*client)->RegisterBuffer(*mem, count * size);
    if (!st.ok()) return Fail("register", st);
    std::vector<std::string> keys;
    std::vector<const void*> ptrs;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < count; ++i) {
      keys.push_back(prefix + "/" + std::to_string(i));
      auto* p = static_cast<uint8_t*>(*mem) + i * size;
      Fill(keys.back(), p, size);
      ptrs.push_back(p);
      sizes.push_back(size);
    }
    size_t ok = 0;
    for (const auto& r : (*client)->BatchPutFrom(keys, ptrs, sizes)) {
      if (r.ok())
        ++ok;
      else
        std::printf("put error: %s\n", r.ToString().c_str());
    }
    std::printf("DONE %zu\n", ok);
    std::fflush(stdout);
    return ok == count ? 0 : 1;
  }
  return 2;
}
