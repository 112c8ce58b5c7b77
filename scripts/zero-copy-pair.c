// What MSG_ZEROCOPY does to a plain TCP sender/receiver pair on this machine: 2 GiB sent in
// pieces of one size, with and without MSG_ZEROCOPY, and how many of the kernel's completions
// said it copied anyway (SO_EE_CODE_ZEROCOPY_COPIED). On loopback and veth every byte is
// copied at delivery, so zero-copy can only cost there; on a NIC with scatter-gather it saves
// the sender's copy. docs/benchmarks.md, "Zero-copy sends".
//
//   cc -O2 -pthread -o /tmp/zero-copy-pair scripts/zero-copy-pair.c
//   for s in 65536 262144 1048576 4194304; do /tmp/zero-copy-pair $s 0; /tmp/zero-copy-pair $s 1; done
//
// Across a link instead of loopback: a receiver listening on PORT (/tmp/zero-copy-pair 0 0 PORT,
// e.g. in another network namespace), then /tmp/zero-copy-pair PIECE ZEROCOPY PORT ADDRESS.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

static const size_t kTotal = (size_t)2 << 30;
static const size_t kRegion = (size_t)64 << 20;  // the sender cycles through it (out of cache)

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double ThreadCpu(void) {
  struct rusage r;
  getrusage(RUSAGE_THREAD, &r);
  return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

static void* Receive(void* arg) {
  int fd = accept(*(int*)arg, NULL, NULL);
  char* buf = malloc((size_t)4 << 20);
  for (size_t got = 0; fd >= 0 && got < kTotal;) {
    ssize_t n = recv(fd, buf, (size_t)4 << 20, 0);
    if (n <= 0) break;
    got += (size_t)n;
  }
  free(buf);
  close(fd);
  return NULL;
}

static long completed, copied;

// Drains the completions on fd's error queue; with `wait`, first waits up to 100 ms for one.
static void Reap(int fd, int wait) {
  for (;;) {
    if (wait) {
      struct pollfd p = {fd, 0, 0};
      poll(&p, 1, 100);
      wait = 0;
    }
    char control[128];
    struct msghdr msg = {0};
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == NULL) continue;
    struct sock_extended_err* e = (struct sock_extended_err*)CMSG_DATA(c);
    if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
    completed += (long)(e->ee_data - e->ee_info) + 1;
    if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) copied += (long)(e->ee_data - e->ee_info) + 1;
  }
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s PIECE_BYTES ZEROCOPY(0|1) [PORT [ADDRESS]]\n", argv[0]);
    return 2;
  }
  const size_t piece = strtoull(argv[1], NULL, 0);
  const int zerocopy = atoi(argv[2]);
  // Loopback with a receiver thread (no PORT); only a receiver on PORT (no ADDRESS); or only a
  // sender to ADDRESS:PORT.
  const int receive_here = argc != 5;
  const int send_here = argc != 4;
  if (send_here && (piece == 0 || piece > kRegion / 2)) return 2;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (argc >= 4) addr.sin_port = htons((uint16_t)atoi(argv[3]));
  if (argc == 4) addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (argc == 5 && inet_pton(AF_INET, argv[4], &addr.sin_addr) != 1) return 2;
  socklen_t len = sizeof(addr);
  if (receive_here && (bind(listener, (struct sockaddr*)&addr, len) != 0 ||
                       listen(listener, 1) != 0 ||
                       getsockname(listener, (struct sockaddr*)&addr, &len) != 0)) {
    perror("listen");
    return 1;
  }
  pthread_t receiver;
  if (receive_here) pthread_create(&receiver, NULL, Receive, &listener);
  if (!send_here) {
    pthread_join(receiver, NULL);
    return 0;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr*)&addr, len) != 0) {
    perror("connect");
    return 1;
  }
  const int one = 1;
  if (zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0) {
    perror("SO_ZEROCOPY");
    return 1;
  }
  char* region = mmap(NULL, kRegion, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (region == MAP_FAILED) return 1;
  memset(region, 7, kRegion);
  const double cpu0 = ThreadCpu();
  const double t0 = Now();
  long sends = 0;
  size_t at = 0;
  for (size_t sent = 0; sent < kTotal;) {
    const size_t want = piece < kTotal - sent ? piece : kTotal - sent;
    for (size_t done = 0; done < want;) {
      ssize_t n = send(fd, region + at + done, want - done, zerocopy ? MSG_ZEROCOPY : 0);
      if (n < 0 && errno == ENOBUFS) {  // the error queue is full: reap, then send again
        Reap(fd, 1);
        continue;
      }
      if (n < 0) {
        perror("send");
        return 1;
      }
      ++sends;
      done += (size_t)n;
    }
    sent += want;
    at = (at + piece) % (kRegion - piece);
    if (zerocopy) Reap(fd, 0);
  }
  while (zerocopy && completed < sends) {
    const long before = completed;
    Reap(fd, 1);
    if (completed == before) break;
  }
  const double seconds = Now() - t0;
  const double cpu = ThreadCpu() - cpu0;
  close(fd);
  if (receive_here) pthread_join(receiver, NULL);
  printf("piece %zu zerocopy %d: %.2f GB/s, sender %.3f cpu-s/GB, %ld sends, %ld completed, "
         "%ld said copied\n",
         piece, zerocopy, (double)kTotal / seconds / 1e9, cpu / ((double)kTotal / 1e9), sends,
         completed, copied);
  return 0;
}
