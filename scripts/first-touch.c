// First touch of fresh anonymous memory, as a node's segment meets it: GiB of memory prefaulted
// on N threads in 256 KiB chunks by the STEPS given (a bit mask: 1 madvise(MADV_POPULATE_WRITE),
// 2 a kernel write of the chunk, i.e. a read of /dev/zero into it, 4 a user-mode store per 4 KiB
// page; 0 prefaults nothing), with 4 KiB pages or transparent huge pages. Then the kernel writes
// the first half (a read of /dev/zero, as recv into it would) and user mode the second (memset),
// each timed: what the first puts into that memory would meet. On a VM the prefault is mostly
// the host backing the memory; under a hypervisor that shadows page tables (PVM), the kernel's
// and user mode's first accesses to a page each cost a hypervisor fault of their own
// (docs/benchmarks.md, round 23).
//
//   cc -O2 -pthread -o /tmp/first-touch scripts/first-touch.c
//   /tmp/first-touch GIB THREADS STEPS THP(0|1)     e.g. /tmp/first-touch 1 2 7 0
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// The kernel writes [p, p + n): a read of /dev/zero into it.
static void KernelWrite(char* p, size_t n) {
  const int fd = open("/dev/zero", O_RDONLY);
  if (fd < 0) {
    perror("open /dev/zero");
    exit(1);
  }
  for (size_t done = 0; done < n;) {
    const ssize_t got = read(fd, p + done, n - done);
    if (got <= 0) {
      perror("read /dev/zero");
      exit(1);
    }
    done += (size_t)got;
  }
  close(fd);
}

struct Share {
  char* base;
  size_t bytes;
  int steps;
};

static void* Prefault(void* arg) {
  const struct Share* s = arg;
  const size_t chunk = 256 << 10;
  for (size_t off = 0; off < s->bytes; off += chunk) {
    const size_t n = s->bytes - off < chunk ? s->bytes - off : chunk;
    if ((s->steps & 1) && madvise(s->base + off, n, MADV_POPULATE_WRITE) != 0) {
      perror("madvise(MADV_POPULATE_WRITE)");
      exit(1);
    }
    if (s->steps & 2) KernelWrite(s->base + off, n);
    if (s->steps & 4) {
      for (size_t p = 0; p < n; p += 4096) ((volatile char*)s->base)[off + p] = 0;
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s GIB THREADS STEPS(0..7) THP(0|1)\n", argv[0]);
    return 2;
  }
  const size_t gib = strtoul(argv[1], NULL, 10);
  const int threads = atoi(argv[2]);
  const int steps = atoi(argv[3]);
  const int thp = atoi(argv[4]);
  if (gib == 0 || threads < 1 || threads > 64 || steps < 0 || steps > 7) {
    fprintf(stderr, "GIB must be > 0, THREADS 1..64, STEPS 0..7\n");
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
    share[i] = (struct Share){p + bytes / threads * i, bytes / threads, steps};
    pthread_create(&tid[i], NULL, Prefault, &share[i]);
  }
  for (int i = 0; i < threads; ++i) pthread_join(tid[i], NULL);
  const double prefault = Now() - t;
  const size_t half = bytes / 2;
  t = Now();
  KernelWrite(p, half);
  const double kernel = Now() - t;
  t = Now();
  memset(p + half, 2, bytes - half);
  const double user = Now() - t;
  printf("%zu GiB steps=%d (1 populate, 2 kernel write, 4 user store) threads=%d thp=%d: "
         "prefault %.2f s/GiB; then a kernel write %.2f GB/s, a user write %.2f GB/s\n",
         gib, steps, threads, thp, prefault / (double)gib, half / kernel / 1e9,
         (bytes - half) / user / 1e9);
  return 0;
}
