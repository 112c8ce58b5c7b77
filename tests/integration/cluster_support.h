// Test support for the cluster tests: object bytes that are a function of (key, version), so a
// reader can tell current bytes from stale ones without keeping copies, and fault injection
// into a node's segment memory.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "process.h"
#include "test_bytes.h"

namespace kvpool::testing {

// The address at which a node maps its segment, from its "serving segment=… base=0x…" log line
// (0 when not found).
inline uintptr_t SegmentBase(Process& node) {
  std::smatch m;
  std::string log = node.Log();
  if (!std::regex_search(log, m, std::regex("serving segment=\\S+ .* base=0x([0-9a-f]+)"))) {
    return 0;
  }
  return static_cast<uintptr_t>(std::stoull(m[1].str(), nullptr, 16));
}

// Flips the low bit of the byte at `address` in process `pid` through /proc/<pid>/mem (the
// test is the node's parent and runs as the same user, which is all the kernel asks). Models a
// bit flip in a node's DRAM that no software path notices. Returns false on failure.
inline bool FlipByte(pid_t pid, uintptr_t address) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDWR);
  if (fd < 0) return false;
  uint8_t b = 0;
  bool ok = ::pread(fd, &b, 1, static_cast<off_t>(address)) == 1;
  b ^= 1;
  ok = ok && ::pwrite(fd, &b, 1, static_cast<off_t>(address)) == 1;
  ::close(fd);
  return ok;
}

}  // namespace kvpool::testing
