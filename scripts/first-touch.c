// First touch of fresh anonymous memory, as a node's segment meets it: GiB of memory written by
// memset (one page fault per 4 KiB) or faulted in by madvise(MADV_POPULATE_WRITE) in 256 KiB
// chunks, on N threads, with 4 KiB pages or transparent huge pages; then the same memory written
// again, for comparison. On a VM the first figure is mostly the host backing the memory.
//
//   cc -O2 -pthread -o /tmp/first-touch scripts/first-touch.c
//   /tmp/first-touch GIB THREADS POPULATE(0|1) THP(0|1)     e.g. /tmp/first-touch 2 2 1 0
#define _GNU_SOURCE
#include <pthread.h>
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

struct Share {
  char* base;
  size_t bytes;
  int populate;
};

static void* Touch(void* arg) {
  const struct Share* s = arg;
  if (!s->populate) {
    memset(s->base, 1, s->bytes);
    return NULL;
  }
  const size_t chunk = 256 << 10;
  for (size_t off = 0; off < s->bytes; off += chunk) {
    const size_t n = s->bytes - off < chunk ? s->bytes - off : chunk;
    if (madvise(s->base + off, n, MADV_POPULATE_WRITE) != 0) {
      perror("madvise(MADV_POPULATE_WRITE)");
      exit(1);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s GIB THREADS POPULATE(0|1) THP(0|1)\n", argv[0]);
    return 2;
  }
  const size_t gib = strtoul(argv[1], NULL, 10);
  const int threads = atoi(argv[2]);
  const int populate = atoi(argv[3]);
  const int thp = atoi(argv[4]);
  if (gib == 0 || threads < 1 || threads > 64) {
    fprintf(stderr, "GIB must be > 0 and THREADS 1..64\n");
    return 2;
  }
  const size_t bytes = gib << 30;
  char* p =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  if (thp) madvise(p, bytes, MADV_HUGEPAGE);
  pthread_t tid[64];
  struct Share share[64];
  double t = Now();
  for (int i = 0; i < threads; ++i) {
    share[i] = (struct Share){p + bytes / threads * i, bytes / threads, populate};
    pthread_create(&tid[i], NULL, Touch, &share[i]);
  }
  for (int i = 0; i < threads; ++i) pthread_join(tid[i], NULL);
  const double first = Now() - t;
  t = Now();
  memset(p, 2, bytes);
  const double again = Now() - t;
  printf("%zu GiB %s threads=%d thp=%d: first touch %.2f GB/s, written again %.2f GB/s\n", gib,
         populate ? "populate" : "memset", threads, thp, bytes / first / 1e9, bytes / again / 1e9);
  return 0;
}
