// Which direction of a copy pays for memory out of cache: 256 KiB pieces written into, then read
// out of, a populated 1 GiB region (a node's segment, far larger than the caches), from and to a
// small buffer that stays cached (the engine's side). A put's receive writes into the segment, a
// get's send reads out of it.
//
//   cc -O2 -o /tmp/cold-copy scripts/cold-copy.c && /tmp/cold-copy
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  const size_t region = (size_t)1 << 30;
  const size_t piece = (size_t)256 << 10;
  const int rounds = 8;
  char* segment =
      mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  char* engine = malloc(4 * piece);
  if (segment == MAP_FAILED || engine == NULL) return 1;
  memset(engine, 1, 4 * piece);
  memset(segment, 2, region);
  for (int into = 1; into >= 0; --into) {
    const double start = Now();
    size_t moved = 0;
    for (int r = 0; r < rounds; ++r) {
      for (size_t off = 0; off < region; off += piece) {
        char* cached = engine + (off / piece % 4) * piece;
        if (into) {
          memcpy(segment + off, cached, piece);
        } else {
          memcpy(cached, segment + off, piece);
        }
        moved += piece;
      }
    }
    printf("%s the region: %.2f GB/s\n", into ? "write into" : "read out of",
           (double)moved / (Now() - start) / 1e9);
  }
  return 0;
}
